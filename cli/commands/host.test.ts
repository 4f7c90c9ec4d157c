// `runlet host`'s --port and --slots, checked by the command before anything starts: a bad value
// claimed the home and started a runtime host, which said "bad environment: RUNLET_HOST_PORT: …"
// (a variable the user never set) or "RUNLET_HOST_SLOTS: …". And its --json, which printed the
// host's text lines.
import { execFile, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, expect, it } from "vitest";
import { ENV } from "../../common/consts.ts";
import { runlet, withFirstUser } from "./test-support.ts";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "runlet-host-flags-"));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

it("refuses a --port or --slots the host cannot take, naming the flag, before anything starts", async () => {
  const home = join(dir, "home");
  const env = { [ENV.home]: home, [ENV.hostToken]: "rlh_test" };
  const cases = [
    ["--port", "abc", "a port number from 0 to 65535 (0: any free one)"],
    ["--port", "70000", "a port number from 0 to 65535 (0: any free one)"],
    ["--port", "-1", "a port number from 0 to 65535 (0: any free one)"],
    ["--slots", "0", "a whole number from 1 to 100000: the replicas it runs at once"],
    ["--slots", "-1", "a whole number from 1 to 100000: the replicas it runs at once"],
    ["--slots", "1.5", "a whole number from 1 to 100000: the replicas it runs at once"],
    ["--slots", "1e3", "a whole number from 1 to 100000: the replicas it runs at once"],
  ];
  for (const [flag, value, takes] of cases) {
    const args = ["host", "--control-plane", "http://127.0.0.1:9", `${flag}=${value}`, "--json"];
    const said = await runlet(args, env);
    expect(said.code, `${flag} ${value}`).toBe(1);
    expect(JSON.parse(said.stdout)).toEqual({ message: `${flag} takes ${takes} (got '${value}')` });
    expect(said.stderr).toBe(`runlet host: ${flag} takes ${takes} (got '${value}')`);
  }
  // Nothing started: the home the host would hold was never made.
  expect(existsSync(home)).toBe(false);
});

it("names its own --port when the port is taken (it named RUNLET_HOST_PORT, runlet start's)", async () => {
  const taken = createServer();
  await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
  const { port } = taken.address() as AddressInfo;
  try {
    // A process of its own: the host it starts writes to the command's own stderr.
    const bin = fileURLToPath(new URL("../../bin/runlet.mjs", import.meta.url));
    const args = ["host", "--control-plane", "http://127.0.0.1:9", "--port", String(port)];
    const env = { ...process.env, [ENV.home]: join(dir, "taken"), [ENV.hostToken]: "rlh_test" };
    const said = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = execFile(process.execPath, [bin, ...args], { env, timeout: 60_000 });
      let stderr = "";
      child.stderr?.on("data", (chunk) => {
        stderr += chunk;
      });
      child.on("close", (code) => resolve({ code, stderr }));
    });
    expect(said.code).toBe(1);
    expect(said.stderr).toContain(
      `port ${port} on 127.0.0.1 is already in use: stop what holds it, or give a free port (runlet host --port N, or RUNLET_HOST_PORT)`,
    );
  } finally {
    await new Promise((resolve) => taken.close(resolve));
  }
});

/** `runlet host … --json` as a process of its own: its stdout, its stderr and its exit code. */
function hostJson(env: NodeJS.ProcessEnv, args: string[], stopOnce: (out: string) => boolean) {
  const bin = fileURLToPath(new URL("../../bin/runlet.mjs", import.meta.url));
  const child = spawn(process.execPath, [bin, "host", ...args, "--json"], { env });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk) => {
    stdout += chunk;
    if (stopOnce(stdout)) child.kill("SIGINT");
  });
  child.stderr.on("data", (chunk) => {
    stderr += chunk;
  });
  const stopAnyway = setTimeout(() => child.kill("SIGKILL"), 60_000);
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.on("close", (code) => {
      clearTimeout(stopAnyway);
      resolve({ code, stdout, stderr });
    }),
  );
}

it("prints one JSON object with --json: the host once it joined, or why it did not", async () => {
  const first = await withFirstUser("host-json", "first");
  try {
    const made = await runlet(["hosts", "token", "--name", "json", "--json"], first.env);
    const { token } = JSON.parse(made.stdout) as { token: string };
    const env = { ...process.env, [ENV.home]: join(dir, "json"), [ENV.hostToken]: token };
    const args = ["--control-plane", first.baseUrl, "--port", "0"];
    const joined = await hostJson(env, args, (out) => out.includes("\n"));
    // It printed "runtime host listening on …" and "runtime host: SIGINT; stopping" as text.
    const lines = joined.stdout.trimEnd().split("\n");
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0] ?? "")).toEqual({
      ready: true,
      hostUrl: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/),
      hostId: expect.stringMatching(/^hst_/),
      controlPlane: first.baseUrl,
    });
    expect(joined.stderr).toContain("runtime host: SIGINT; stopping");
    const refused = await hostJson({ ...env, [ENV.hostToken]: "rlh_unknown" }, args, () => false);
    expect(refused.code).not.toBe(0);
    expect(JSON.parse(refused.stdout)).toEqual({
      message: expect.stringMatching(/^the runtime host stopped before it was ready \(exit \d+\)/),
    });
    expect(refused.stderr).toContain("the control plane refused this host");
  } finally {
    await first.stop();
  }
});
