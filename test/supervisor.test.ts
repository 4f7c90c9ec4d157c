import { existsSync, readdirSync, readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { client, sleep, sleeper } from "./apps.ts";
import {
  cli,
  isAlive,
  json,
  newHome,
  portsFree,
  processesOf,
  processTree,
  type Runlet,
  removeHome,
  startRunlet,
} from "./harness.ts";
import { type Component, kill9, pidOf, serving, until, workerdPids } from "./supervision.ts";

// Issue 12: `runlet start` heals. A component that dies (SIGKILL) is restarted and the stack
// serves again (the runs' logs the runtime host had written too); killing `runlet start` itself leaves no component behind, and the next start on
// the same home works; a component that keeps dying stops everything, naming its log, and what
// its replicas had mounted goes with it. The case that saves the Worker's source under a running
// stack is in supervisor-source-edits.test.ts, which runs alone.

/** The mount points under `dir`, from this process's mount table. */
function mountsUnder(dir: string): string[] {
  return readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .map((line) => line.split(" ")[4] ?? "")
    .filter((point) => point.startsWith(`${dir}/`));
}

const APP = sleeper(['name = "echo"', 'runtime = "managed"']);
/** Writes `input.line`, then sleeps `input.ms`. */
const LOGGER = {
  "runlet.toml": 'name = "logger"\nruntime = "managed"\n',
  "main.mjs": `export async function run(input) {
  console.log(input.line);
  await new Promise((resolve) => setTimeout(resolve, input.ms ?? 0));
  return "ok";
}`,
};

describe("runlet start supervises its components", () => {
  let home: string;
  let stack: Runlet;
  const stacks: Runlet[] = [];

  beforeAll(async () => {
    home = await newHome();
    stack = await startRunlet(home);
    stacks.push(stack);
    await client(stack).deploy(APP);
    await client(stack).deploy(LOGGER);
  });

  afterAll(async () => {
    for (const s of stacks) await s.stop();
    await removeHome(home);
  });

  it("restarts each component killed with SIGKILL, and the stack serves again; runs' logs outlive the runtime host", async () => {
    // `runlet logs` of a run that ended before the host's kill, and of one still running at it.
    const api = client(stack);
    const runLogs = (runId: string) => cli(["logs", runId], stack.env);
    const ended = await api.submit("logger", { line: "written by a run that ended" });
    expect(ended.status).toBe(200);
    const endedId = ended.headers.get("x-request-id") as string;
    const started = await api.submit(
      "logger",
      { line: "written by a run still running", ms: 60_000 },
      "async=true",
    );
    expect(started.status).toBe(202);
    const runningId = (await json(started)).run_id as string;
    const { baseUrl, projectId, token } = stack.local;
    const logsRoute = (runId: string) =>
      fetch(`${baseUrl}/v2/projects/${projectId}/runs/${runId}/logs`, {
        headers: { authorization: `Bearer ${token}` },
      }).then((res) => res.text());
    for (const [runId, line] of [
      [endedId, "that ended"],
      [runningId, "still running"],
    ] as const)
      await until(
        `${runId}'s line`,
        async () => (await logsRoute(runId)).includes(line) || undefined,
        30_000,
      );
    await sleep(1_000); // the host writes a run's lines to disk every 100 ms
    const components: Component[] = ["runtime host", "control plane", "worker"];
    for (const component of components) {
      const old = pidOf(stack, component) as number;
      expect(old, component).toBeGreaterThan(0);
      await kill9(old);
      const killed = Date.now();
      await until(
        `a new ${component}`,
        () => {
          const pid = pidOf(stack, component);
          return pid !== undefined && pid !== old ? pid : undefined;
        },
        15_000,
      );
      await serving(stack, "echo", 30_000);
      expect(Date.now() - killed, `${component} serving again`).toBeLessThan(30_000);
      expect(stack.output()).toContain(
        `the ${component} exited unexpectedly (signal SIGKILL); restart 1 in 250 ms`,
      );
      if (component !== "runtime host") continue;
      // Until 2026-11-27 both were gone: "no logs of run … it keeps the latest runs …, in memory".
      const after = await runLogs(endedId);
      expect(after.stderr).toBe("");
      expect(after.stdout).toMatch(/ {2}stdout {2}written by a run that ended\n$/);
      expect((await runLogs(runningId)).stdout).toContain(
        "  stdout  written by a run still running\n",
      );
      await api.cancel("logger", runningId); // if it was handed to the new host again
    }

    // A workerd killed under wrangler (which would go on without it) restarts the worker too.
    const workerd = workerdPids(stack);
    expect(workerd.length).toBeGreaterThan(0);
    await kill9(workerd[0] as number);
    await until(
      "the worker's restart",
      () =>
        stack.output().includes("the worker exited unexpectedly") &&
        stack.output().includes("the worker is back (restart 2)")
          ? true
          : undefined,
      30_000,
    );
    await serving(stack, "echo", 30_000);
    for (const pid of workerd) expect(isAlive(pid)).toBe(false);

    // Each restart is in the supervisor's log and in the component's, with its count.
    const logs = join(home, "logs");
    const supervisorLog = await readFile(join(logs, "supervisor.log"), "utf8");
    expect(supervisorLog).toMatch(/the runtime host exited unexpectedly .*restart 1/);
    expect(supervisorLog).toContain("the worker is back (restart 2)");
    expect(await readFile(join(logs, "control-plane.log"), "utf8")).toContain(
      "the control plane is back (restart 1)",
    );
    // Wrangler's own log is one file however often the Worker started (it was one per start).
    expect(readdirSync(logs).filter((name) => name.startsWith("wrangler"))).toEqual([
      "wrangler.log",
    ]);
  }, 240_000);

  it("leaves no component behind when runlet start itself is killed, and starts again", async () => {
    const supervisor = stack.process.pid as number;
    const components = processTree(supervisor).filter((pid) => pid !== supervisor);
    expect(components.length).toBeGreaterThanOrEqual(5); // three components, workerd, esbuild, replicas
    process.kill(supervisor, "SIGKILL");
    const killed = Date.now();
    await stack.stop(); // reaped
    stacks.splice(stacks.indexOf(stack), 1);
    while (Date.now() - killed < 10_000 && components.some(isAlive)) await sleep(100);
    expect(components.filter(isAlive), "alive 10 s after the kill").toEqual([]);
    expect(processesOf(home, stack.ports)).toEqual([]);
    await portsFree(stack.ports, 1_000);

    stack = await startRunlet(home, stack.ports);
    stacks.push(stack);
    await serving(stack, "echo", 30_000);
  }, 180_000);

  it("stops everything when a component exits 5 times within a minute, naming its log, and leaves nothing mounted", async () => {
    // A warm replica on each of its hosts: a folder mounted under the home (and, sandboxed, a
    // network namespace) that the last host killed leaves behind for the supervisor to remove.
    await client(stack).deploy(sleeper(['name = "warm"', "[scaling]", "min_replicas = 1"]));
    let last: number | undefined;
    for (let exit = 1; exit <= 5; exit++) {
      const pid = await until(
        "a runtime host to kill",
        () => {
          const found = pidOf(stack, "runtime host");
          return found !== undefined && found !== last ? found : undefined;
        },
        15_000,
      );
      if (exit === 5)
        await until(
          "a replica's folder mounted",
          () => mountsUnder(home).length > 0 || undefined,
          15_000,
        );
      await kill9(pid);
      last = pid;
    }
    // Its own exit, not one a signal of the test's would bring.
    const { process: supervisor } = stack;
    const exited = new Promise((resolve) => {
      if (supervisor.exitCode !== null) resolve(supervisor.exitCode);
      else supervisor.once("exit", (exitCode) => resolve(exitCode));
    });
    const code = await Promise.race([exited, sleep(40_000).then(() => "still running")]);
    stacks.splice(stacks.indexOf(stack), 1);
    expect(code).toBe(1);
    expect(stack.output()).toContain(
      `the runtime host exited 5 times within a minute (last: signal SIGKILL); stopping Runlet. Its log: ${join(home, "logs", "runtime-host.log")}`,
    );
    expect(processesOf(home, stack.ports)).toEqual([]);
    expect(mountsUnder(home)).toEqual([]);
    const namespaces = existsSync("/run/netns") ? readdirSync("/run/netns") : [];
    expect(namespaces.filter((n) => n.startsWith(`runlet-${last}-`))).toEqual([]);
  }, 120_000);
});

describe("a runtime host the control plane refuses", () => {
  let home: string;
  let stack: Runlet | undefined;

  beforeAll(async () => {
    home = await newHome();
  });

  afterAll(async () => {
    await stack?.stop();
    await removeHome(home);
  });

  it("stays stopped once its token 'local' is revoked, the rest running on; the next start makes a new token", async () => {
    stack = await startRunlet(home);
    const { baseUrl, apiUrl, token } = stack.local;
    const auth = { authorization: `Bearer ${token}` };
    const { tokens } = (await (
      await fetch(`${baseUrl}/v2/hosts/tokens`, { headers: auth })
    ).json()) as {
      tokens: Array<{ id: string; name: string }>;
    };
    const local = tokens.find((t) => t.name === "local")?.id;
    const revoked = await fetch(`${baseUrl}/v2/hosts/tokens/${local}`, {
      method: "DELETE",
      headers: auth,
    });
    expect(revoked.status).toBe(204);
    await until(
      "the host to stop for good",
      () => /the runtime host stopped for good \(code 3\)/.test(stack?.output() ?? "") || undefined,
      30_000,
    );
    // Before, it was started again five times, refused each time, and took the stack down.
    expect(stack.output()).toContain(
      "the control plane refused it: its host token 'local' was revoked; the next 'runlet start' makes a new one. It is not started again; the rest of Runlet runs on.",
    );
    expect(stack.output()).not.toMatch(/runtime host exited unexpectedly/);
    expect(stack.process.exitCode).toBeNull();
    expect((await fetch(`${baseUrl}/healthz`)).status).toBe(200);
    expect((await fetch(`${apiUrl}/healthz`)).status).toBe(200);

    await stack.stop();
    stack = await startRunlet(home);
    const { hosts } = (await (
      await fetch(`${stack.local.baseUrl}/v2/hosts`, { headers: auth })
    ).json()) as { hosts: Array<{ name: string; state: string }> };
    expect(
      hosts.filter((h) => h.state === "up").map((h) => h.name),
      JSON.stringify(hosts),
    ).toEqual(["local-1"]);
  }, 120_000);
});
