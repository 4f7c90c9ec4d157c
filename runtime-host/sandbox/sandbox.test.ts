// The sandbox, for real: apps deployed to a host that runs them inside bubblewrap cannot see each
// other, the host's files or its processes, write only in their folder and /tmp, and stay within
// their limits. Skipped (saying why) only on a machine without bubblewrap; CI installs it.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunningHost } from "../server.ts";
import {
  eventually,
  hostClient,
  isGone,
  newHome,
  removeHome,
  startTestHost,
  TOKEN,
  waitUntil,
} from "../test-support.ts";
import { detectSandbox, SANDBOX_APP_DIR, SANDBOX_LIMITS } from "./sandbox.ts";

const sandbox = detectSandbox();

const PROBE = {
  "main.mjs": `
import { execFileSync, spawn } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
const attempt = (fn) => { try { return { ok: true, value: fn() }; } catch (e) { return { ok: false, code: e.code ?? e.message }; } };
export function read({ path }) { return attempt(() => readFileSync(path, "utf8")); }
export function write({ path }) { return attempt(() => { writeFileSync(path, "x"); return "written"; }); }
export function look() {
  return {
    cwd: process.cwd(),
    home: process.env.HOME,
    env: Object.keys(process.env).sort(),
    pids: readdirSync("/proc").filter((e) => /^\\d+$/.test(e)).map(Number),
    own: readdirSync("."),
  };
}
export function spawnChild() {
  const out = execFileSync("/bin/sh", ["-c", "sleep 30 >/dev/null 2>&1 & echo started"], { encoding: "utf8" });
  return out.trim();
}
export async function forkBomb() {
  const children = [];
  for (let i = 0; i < 400; i++) {
    const child = spawn("/bin/sleep", ["30"], { stdio: "ignore" });
    child.on("error", () => {}); // a refused fork is reported here, with no pid
    children.push(child);
  }
  await new Promise((r) => setTimeout(r, 100));
  const started = children.filter((c) => c.pid !== undefined);
  for (const child of started) child.kill("SIGKILL");
  return { started: started.length };
}
export const exit3 = () => process.exit(3);
export const grow = () => { const a = []; for (;;) a.push(new Array(1e6).fill(1.5)); };
export function hog() {
  const kept = [];
  try { for (;;) kept.push(Buffer.alloc(64 * 1024 * 1024, 1)); }
  catch (e) { return { failedAfterMiB: kept.length * 64, error: e.message }; }
}
`,
};

describe.skipIf(sandbox.kind !== "bubblewrap")("the bubblewrap sandbox", () => {
  let home: string;
  let host: RunningHost;
  let client: ReturnType<typeof hostClient>;
  const call = async (app: string, fn: string, input: unknown = null) => {
    const res = await client.invoke("p", app, fn, JSON.stringify(input));
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.result as Record<string, unknown>;
  };

  beforeAll(async () => {
    home = await newHome();
    await writeFile(join(home, "internal-token"), "the host's secret");
    host = await startTestHost(home, { sandbox });
    client = hostClient(host.url);
    for (const app of ["alpha", "beta"]) {
      const files = { ...PROBE, "secret.txt": `${app}'s own data` };
      expect((await client.deploy("p", app, 1, files)).status).toBe(200);
    }
  });

  afterAll(async () => {
    await host.close();
    await removeHome(home);
  });

  it("shows an app its own files at /app, and nothing of other apps or of RUNLET_HOME", async () => {
    expect(await call("alpha", "read", { path: "secret.txt" })).toEqual({
      ok: true,
      value: "alpha's own data",
    });
    const look = await call("alpha", "look");
    expect(look).toMatchObject({ cwd: SANDBOX_APP_DIR, home: SANDBOX_APP_DIR });
    expect(look.own).toContain("main.mjs");
    for (const path of [
      join(home, "host", "apps", "p", "beta", "v1", "secret.txt"),
      join(home, "internal-token"),
      `/proc/${process.pid}/environ`, // the host's own process
    ]) {
      const result = await call("alpha", "read", { path });
      expect(result.ok, path).toBe(false);
    }
  });

  it("lets an app write only in its folder and its private /tmp", async () => {
    expect(await call("alpha", "write", { path: "out.txt" })).toEqual({
      ok: true,
      value: "written",
    });
    expect(await call("alpha", "write", { path: "/tmp/scratch" })).toEqual({
      ok: true,
      value: "written",
    });
    for (const path of ["/usr/evil", "/etc/evil", join(home, "evil")]) {
      expect((await call("alpha", "write", { path })).ok, path).toBe(false);
    }
    // beta's /tmp is not alpha's.
    expect((await call("beta", "read", { path: "/tmp/scratch" })).ok).toBe(false);
  });

  it("runs an app in its own pid namespace with only its own environment", async () => {
    const look = await call("beta", "look");
    expect((look.pids as number[]).every((pid) => pid < 10)).toBe(true);
    expect(look.env).not.toContain("RUNLET_INTERNAL_TOKEN");
    expect(look.env).toEqual(
      expect.arrayContaining(["RUNLET_APP", "RUNLET_PROJECT", "PATH", "HOME"]),
    );
  });

  it("stops the app's whole process tree with its replica", async () => {
    expect(await call("beta", "spawnChild")).toBe("started");
    const [app] = (await client.metrics()).filter((a) => a.app === "beta");
    const pid = app?.replicas[0]?.pid as number;
    expect(pid).toBeGreaterThan(0);
    await fetch(`${host.url}/internal/apps/p/beta`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    await waitUntil(() => isGone(pid));
    // No `sleep 30` of the sandbox is left anywhere on the machine.
    const sleepers = async () =>
      execFileSync("ps", ["-eo", "args"], { encoding: "utf8" })
        .split("\n")
        .filter((line) => line.trim() === "sleep 30");
    expect(await eventually(sleepers, (left) => left.length === 0)).toEqual([]);
  });

  it("contains a fork bomb: past the process limit spawning fails, and the host answers on", async () => {
    const bomb = await call("alpha", "forkBomb");
    expect(bomb.started as number).toBeLessThan(SANDBOX_LIMITS.processes);
    expect((await fetch(`${host.url}/healthz`)).status).toBe(200);
  });

  it("contains a runaway allocation: it fails inside the app, and the host answers on", async () => {
    const hog = await call("alpha", "hog");
    expect(hog.failedAfterMiB as number).toBeLessThanOrEqual(1024);
    expect((await fetch(`${host.url}/healthz`)).status).toBe(200);
  });

  it("leaves nothing mounted when the host cannot listen", async () => {
    const other = await newHome();
    try {
      // TEST-NET-1: no interface of this machine has it, so the listen fails (no traffic).
      // A sandbox of its own: stopping undoes every sandbox its sandbox object made.
      const own = detectSandbox();
      await expect(startTestHost(other, { sandbox: own, hostname: "192.0.2.1" })).rejects.toThrow(
        /cannot listen on 192.0.2.1/,
      );
      const mounts = readFileSync("/proc/self/mountinfo", "utf8");
      expect(mounts.split("\n").filter((line) => line.includes(other))).toEqual([]);
    } finally {
      await removeHome(other);
    }
  });

  it("says how a replica's process ended: its own exit code, or its heap out of memory", async () => {
    expect((await client.deploy("p", "gamma", 1, PROBE)).status).toBe(200);
    // bwrap reports the app's end a moment after the app's IPC channel closes; the host's kill
    // at the close had won that race about half the time, and every crash read "signal SIGKILL".
    for (let i = 0; i < 3; i++) {
      const res = await client.invoke("p", "gamma", "exit3", "null");
      expect([res.status, res.body.message]).toEqual([
        502,
        "the function's process exited unexpectedly (code 3); its output (runlet logs --app gamma) may say why",
      ]);
    }
    const res = await client.invoke("p", "gamma", "grow", "null");
    expect(res.status).toBe(502);
    expect(res.body.message).toMatch(
      /^the function ran out of memory: its process reached the JavaScript heap's limit and ended \(code 134: 128 \+ SIGABRT\)/,
    );
  });
});
