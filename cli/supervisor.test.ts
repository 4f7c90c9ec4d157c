/**
 * The supervisor of `runlet start` with stand-in components (a small node server each), in
 * seconds rather than the minutes of the end-to-end tests in test/supervisor.test.ts: how a
 * stop reaches a component and its group, a second signal's hurry, a restart, the crash limit.
 */
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { isAlive } from "../test/harness.ts";
import { until } from "../test/supervision.ts";
import { freePort, startProcess } from "./processes.ts";
import { type ComponentSpec, Supervisor } from "./supervisor.ts";

/**
 * A component: answers GET /healthz; on SIGTERM writes `CHILD_FILE.stopping` and takes
 * `GRACE_MS` to stop (a second SIGTERM ends at once). With `EXIT_WHEN_SEEN` it exits by
 * itself (code 3) once its first answer is sent: the supervisor saw it ready. Once listening it writes its pid to `CHILD_FILE.leader`. Its child, in its process group,
 * writes `CHILD_FILE` (its pid) and, if it is ever sent SIGTERM, `CHILD_FILE.term`.
 */
const COMPONENT = `
const { createServer } = require("node:http");
const { spawn } = require("node:child_process");
const env = process.env;
spawn(process.execPath, ["-e", \`
  require("node:fs").writeFileSync(\${JSON.stringify(env.CHILD_FILE)}, String(process.pid));
  process.on("SIGTERM", () => require("node:fs").writeFileSync(\${JSON.stringify(env.CHILD_FILE + ".term")}, ""));
  setInterval(() => {}, 1000);
\`], { stdio: "ignore" });
const server = createServer((req, res) => {
  res.end("ok");
  if (env.EXIT_WHEN_SEEN) res.on("finish", () => setTimeout(() => process.exit(3), 20));
});
server.listen(Number(env.PORT), "127.0.0.1", () => {
  require("node:fs").writeFileSync(env.CHILD_FILE + ".leader", String(process.pid));
});
let terms = 0;
process.on("SIGTERM", () => {
  if (++terms > 1) process.exit(0);
  require("node:fs").writeFileSync(env.CHILD_FILE + ".stopping", "");
  setTimeout(() => process.exit(0), Number(env.GRACE_MS));
});
`;

let dir: string;
let supervisor: Supervisor | undefined;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "runlet-supervisor-"));
  await writeFile(join(dir, "component.cjs"), COMPONENT);
});

afterEach(async () => {
  await supervisor?.hurry();
  supervisor = undefined;
  await rm(dir, { recursive: true, force: true });
});

async function component(
  name: string,
  env: { GRACE_MS: number; EXIT_WHEN_SEEN?: true },
): Promise<ComponentSpec & { childFile: string }> {
  const port = await freePort();
  const childFile = join(dir, `${name}.child`);
  return {
    name,
    label: name,
    healthUrl: `http://127.0.0.1:${port}/healthz`,
    start: () =>
      startProcess(name, process.execPath, [join(dir, "component.cjs")], {
        cwd: dir,
        env: {
          ...process.env,
          PORT: String(port),
          CHILD_FILE: childFile,
          GRACE_MS: String(env.GRACE_MS),
          EXIT_WHEN_SEEN: env.EXIT_WHEN_SEEN ? "1" : "",
        },
        logFile: join(dir, `${name}.log`),
        echo: false,
      }),
    stopGraceMs: 20_000,
    stopOrder: 0,
    childFile,
  };
}

/** The pid a component or its child wrote to `file`, once it has. */
async function pidIn(file: string): Promise<number> {
  return until(
    `a pid in ${file}`,
    async () => Number(await readFile(file, "utf8").catch(() => "")) || undefined,
    10_000,
  );
}

async function started(specs: ComponentSpec[]): Promise<Supervisor> {
  supervisor = new Supervisor(specs, { logDir: dir, readyTimeoutMs: 10_000 });
  expect(await supervisor.ready()).toBeUndefined();
  return supervisor;
}

it("stops a component with SIGTERM to it alone, then kills what is left of its group", async () => {
  const spec = await component("a", { GRACE_MS: 300 });
  const sup = await started([spec]);
  const child = await pidIn(spec.childFile);
  await sup.stop();
  expect(await sup.run()).toBe(0);
  // Its child got no SIGTERM of the supervisor's (the component stops what it started: the
  // runtime host's slirp4netns lives in its group), and did not outlive it.
  expect(existsSync(`${spec.childFile}.term`)).toBe(false);
  await until("its child gone", () => (isAlive(child) ? undefined : true), 2_000);
});

it("hurries a stop: told again, a component in its grace stops at once", async () => {
  const spec = await component("a", { GRACE_MS: 15_000 });
  const sup = await started([spec]);
  const began = Date.now();
  const stopping = sup.stop();
  // Signals sent before the first is handled are one: a person's second Ctrl-C comes later.
  await until(
    "its stop begun",
    () => existsSync(`${spec.childFile}.stopping`) || undefined,
    10_000,
  );
  await sup.hurry();
  await stopping;
  expect(Date.now() - began).toBeLessThan(5_000);
});

it("restarts a component that exits, its group killed first, saying so with its count", async () => {
  const spec = await component("a", { GRACE_MS: 0 });
  const restarted: number[] = [];
  const sup = await started([{ ...spec, restarted: async () => void restarted.push(Date.now()) }]);
  const child = await pidIn(spec.childFile);
  process.kill(await pidIn(`${spec.childFile}.leader`), "SIGKILL");
  await until("its restart", () => restarted.length > 0 || undefined, 10_000);
  expect((await fetch(spec.healthUrl)).ok).toBe(true);
  const log = await readFile(join(dir, "supervisor.log"), "utf8");
  expect(log).toContain("the a exited unexpectedly (signal SIGKILL); restart 1 in 250 ms");
  expect(log).toContain("the a is back (restart 1)");
  expect(await readFile(join(dir, "a.log"), "utf8")).toContain("the a is back (restart 1)");
  // What the killed one started went with it.
  await until("its child gone", () => (isAlive(child) ? undefined : true), 2_000);
  await sup.stop();
});

it("stops everything when a component exits 5 times within a minute, naming its log", async () => {
  const other = await component("b", { GRACE_MS: 0 });
  const sup = await started([await component("a", { GRACE_MS: 0, EXIT_WHEN_SEEN: true }), other]);
  // Pauses of 250, 500, 1000 and 2000 ms between its exits.
  expect(await sup.run()).toBe(1);
  const log = await readFile(join(dir, "supervisor.log"), "utf8");
  expect(log).toContain(
    `the a exited 5 times within a minute (last: code 3); stopping Runlet. Its log: ${join(dir, "a.log")}`,
  );
  expect(log.match(/restart \d in/g)).toEqual([
    "restart 1 in",
    "restart 2 in",
    "restart 3 in",
    "restart 4 in",
  ]);
  await sup.stop();
  await expect(fetch(other.healthUrl)).rejects.toThrow();
});
