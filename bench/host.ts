/**
 * `npm run bench:host`: the runtime host's speed. Starts a host in-process on a temporary home,
 * and times: cold starts (scale from zero to the first answer) of a managed and a custom app;
 * a fresh plain `node` process answering its first HTTP request (the floor a cold start is
 * compared with); warm calls through the host against the same kind of replica reached
 * directly; throughput at concurrency 1, 8 and 32. Prints a table of medians and p99, and last a
 * one-line machine-readable summary.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { Agent, request as httpRequest } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { appConfigSchema } from "../common/app-config.ts";
import { appRoot, appsRoot, versionDirName } from "../common/app-paths.ts";
import { HEADER, LOOPBACK } from "../common/consts.ts";
import { DEFAULT_LIMITS } from "../runtime-host/limits.ts";
import { ManagedReplica } from "../runtime-host/pool/replica.ts";
import { freePort } from "../runtime-host/runtimes/custom/launch.ts";
import { CustomReplica } from "../runtime-host/runtimes/custom/replica.ts";
import { managedLauncher } from "../runtime-host/runtimes/managed/launch.ts";
import { detectSandbox } from "../runtime-host/sandbox/sandbox.ts";
import { startHost } from "../runtime-host/server.ts";
import { hostClient, TOKEN } from "../runtime-host/test-support.ts";
import {
  countOptions,
  describeMachine,
  machineInfo,
  measure,
  ms,
  type Summary,
  summarize,
  table,
} from "./stats.ts";

const HELP = `Usage: npm run bench:host -- [options]

Times the runtime host: cold starts, warm-call overhead and throughput.

Options:
  --samples N   warm samples per measurement, after 20 warm-up runs (default 300)
  --cold N      cold starts per runtime, and plain node starts (default 30)
  --seconds N   seconds per throughput level (default 3)
  --json        print the results as JSON instead of a table
  --help        show this help
`;

const args = countOptions("bench:host", HELP, { samples: 300, cold: 30, seconds: 3 });
const { samples, cold: coldSamples, seconds } = args;

const progress = (line: string) => process.stderr.write(`${line}\n`);

const MANAGED = { "main.mjs": "export const run = (input) => ({ ok: true, input });" };
/** Listens at once and is healthy at once: its readiness is node's own start-up. */
const SERVER = `require("node:http").createServer((req, res) => {
  res.writeHead(200, { "content-type": "application/json" });
  res.end('{"ok":true}');
}).listen(Number(process.env.PORT), "127.0.0.1");`;

const configOf = (name: string, extra: Record<string, unknown>) =>
  appConfigSchema.parse({ name, ...extra });

/**
 * One request with a lean keep-alive client (node:http): what is measured is the host, not the
 * client, and the same client calls the replicas directly.
 */
const agent = new Agent({ keepAlive: true, maxSockets: 64 });
const auth = { authorization: `Bearer ${TOKEN}`, [HEADER.runId]: "run_bench" };
function request(url: string, method: string, body?: string, socketPath?: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method, agent, headers: auth, socketPath }, (res) => {
      res.resume();
      res.on("end", () =>
        res.statusCode === 200 ? resolve() : reject(new Error(`${url}: ${res.statusCode}`)),
      );
    });
    req.on("error", reject);
    req.end(body);
  });
}

/** Polls `check` every millisecond until it holds (bounded). */
async function until(check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 1));
  }
}

/** A fresh `node server.js` until it answers its first request: what a process start costs. */
async function plainNodeStart(dir: string): Promise<number> {
  const port = await freePort();
  const started = performance.now();
  const child: ChildProcess = spawn(process.execPath, ["server.js"], {
    cwd: dir,
    env: { PORT: String(port), PATH: process.env.PATH },
    stdio: "ignore",
  });
  try {
    await until(async () => {
      try {
        await request(`http://${LOOPBACK}:${port}/`, "GET");
        return true;
      } catch {
        return false;
      }
    });
    return performance.now() - started;
  } finally {
    child.kill("SIGKILL");
  }
}

const home = await mkdtemp(join(tmpdir(), "runlet-bench-host-"));
// The sandbox the host would pick (bubblewrap where installed); the direct replicas run in it too.
const sandbox = detectSandbox();
const host = await startHost({ port: 0, home, internalToken: TOKEN, sandbox });
const client = hostClient(host.url);
try {
  // Scale-to-zero apps (cooldown 0: each replica stops once idle) and warm ones.
  const deploy = async (
    app: string,
    files: Record<string, string>,
    extra: Record<string, unknown>,
  ) => {
    const res = await client.deploy("bench", app, 1, files, configOf(app, extra));
    if (res.status !== 200) throw new Error(`deploy ${app}: ${JSON.stringify(res.body)}`);
  };
  const custom = { runtime: "custom", custom: { entrypoint: ["node", "server.js"] } };
  await deploy("cold-managed", MANAGED, { scaling: { min_replicas: 0, cooldown: 0 } });
  await deploy("cold-custom", { "server.js": SERVER }, { ...custom, scaling: { cooldown: 0 } });
  const warmScaling = { min_replicas: 1, max_replicas: 1, replica_concurrency: 64 };
  await deploy("warm-managed", MANAGED, { scaling: warmScaling });
  await deploy("warm-custom", { "server.js": SERVER }, { ...custom, scaling: warmScaling });

  const invoke = (app: string) =>
    request(`${host.url}/internal/invoke/bench/${app}/run`, "POST", '{"n":1}');
  const forward = (app: string) => request(`${host.url}/internal/http/bench/${app}/`, "GET");
  // Between cold starts: the app is at zero again and the spares are back (the steady state).
  const noReplicas = (app: string) => async () =>
    !(await client.metrics()).find((a) => a.app === app)?.replicas.length &&
    (await client.spares()).length === DEFAULT_LIMITS.spares &&
    (await client.customSpares()).length === DEFAULT_LIMITS.spares;

  // ---- cold starts ----
  const coldOf = async (app: string, call: () => Promise<void>) => {
    const times: number[] = [];
    for (let i = 0; i < coldSamples; i++) {
      await until(noReplicas(app));
      const started = performance.now();
      await call();
      times.push(performance.now() - started);
    }
    return summarize(times);
  };
  progress("cold starts: managed…");
  const coldManaged = await coldOf("cold-managed", () => invoke("cold-managed"));
  progress("cold starts: custom…");
  const coldCustom = await coldOf("cold-custom", () => forward("cold-custom"));
  progress("plain node process starts…");
  const serverDir = join(home, "plain");
  await mkdir(serverDir);
  await writeFile(join(serverDir, "server.js"), SERVER);
  const spawnTimes: number[] = [];
  for (let i = 0; i < coldSamples; i++) spawnTimes.push(await plainNodeStart(serverDir));
  const plainStart = summarize(spawnTimes);

  // ---- warm calls: through the host, and the same kind of replica reached directly ----
  progress("warm calls…");
  await until(async () =>
    (await client.metrics()).every((a) => !a.app.startsWith("warm") || a.replicas[0]?.ready),
  );
  const viaHostManaged = await measure(() => invoke("warm-managed"), { samples });
  const viaHostCustom = await measure(() => forward("warm-custom"), { samples });
  const replicaOptions = {
    startTimeoutMs: 30_000,
    stopGraceMs: DEFAULT_LIMITS.stopGraceMs,
    launch: managedLauncher(sandbox),
    sandbox,
  };
  // The direct replicas run the files the host deployed.
  const versionDir = (app: string) =>
    join(appRoot(appsRoot(home), "bench", app), versionDirName(1));
  const spec = { project: "bench", app: "direct", version: 1, dir: versionDir("warm-managed") };
  // Started as the host starts its replicas: a spare in an empty folder, then given the app.
  const slot = async (name: string) => {
    const dir = join(home, "bench-slots", name);
    await mkdir(dir, { recursive: true });
    return dir;
  };
  const spareSpec = { project: "", app: "", version: 0, env: { RUNLET_SPARE: "1" } };
  const managedReplica = new ManagedReplica(
    { ...spareSpec, dir: await slot("managed") },
    replicaOptions,
  ).assign(spec);
  await managedReplica.start();
  const directManaged = await measure(
    () => managedReplica.invoke({ fn: "run", payload: { n: 1 }, runId: "run_bench" }, 10_000),
    { samples },
  );
  await managedReplica.stop();
  const customReplica = new CustomReplica(
    { ...spareSpec, dir: await slot("custom"), config: {} },
    replicaOptions,
  ).assign({ ...spec, dir: versionDir("warm-custom"), config: configOf("direct", custom) });
  await customReplica.start();
  const directCustom = await measure(
    () => request(`${customReplica.origin}/`, "GET", undefined, customReplica.socketPath),
    { samples },
  );
  await customReplica.stop();

  // ---- throughput: N callers in a loop for a fixed time ----
  const throughput: { concurrency: number; rps: number }[] = [];
  for (const concurrency of [1, 8, 32]) {
    progress(`throughput at concurrency ${concurrency}…`);
    const deadline = performance.now() + seconds * 1000;
    let done = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (performance.now() < deadline) {
          await invoke("warm-managed");
          done++;
        }
      }),
    );
    throughput.push({ concurrency, rps: done / seconds });
  }

  const overhead = (via: Summary, direct: Summary) => via.p50 - direct.p50;
  const rows: [string, Summary][] = [
    ["managed cold start (zero → first answer)", coldManaged],
    ["custom cold start (zero → first answer)", coldCustom],
    ["plain node process: spawn → first answer", plainStart],
    ["managed warm call through the host", viaHostManaged],
    ["managed warm call, replica direct (IPC)", directManaged],
    ["custom warm request through the host", viaHostCustom],
    ["custom warm request, replica direct (HTTP)", directCustom],
  ];
  const machine = machineInfo();
  const summary = {
    managed_cold_p50_ms: coldManaged.p50,
    custom_cold_overhead_p50_ms: coldCustom.p50 - plainStart.p50,
    warm_overhead_p50_ms: Math.max(
      overhead(viaHostManaged, directManaged),
      overhead(viaHostCustom, directCustom),
    ),
    rps_c32: throughput.at(-1)?.rps ?? 0,
    cold_vs_spawn: coldManaged.p50 / plainStart.p50,
  };
  if (args.json) {
    console.log(
      JSON.stringify({ machine, rows: Object.fromEntries(rows), throughput, summary }, null, 2),
    );
  } else {
    console.log(
      `\nRuntime host, ${coldSamples} cold starts each, ${samples} warm samples each (ms)\n`,
    );
    console.log(
      table(
        ["measurement", "p50 ms", "p99 ms"],
        rows.map(([name, s]) => [name, ms(s.p50), ms(s.p99)]),
      ),
    );
    console.log(
      `\n${table(
        ["concurrency", "calls/s"],
        throughput.map((t) => [t.concurrency, Math.round(t.rps)]),
      )}`,
    );
    console.log(
      `\nwarm overhead (p50, through the host minus direct): managed ${ms(overhead(viaHostManaged, directManaged))} ms, custom ${ms(overhead(viaHostCustom, directCustom))} ms` +
        `\nreplicas: ${sandbox.kind === "bubblewrap" ? "in bubblewrap" : "unsandboxed"}; machine: ${describeMachine(machine)}`,
    );
  }
  console.log(
    `bench:host managed_cold_p50_ms=${ms(summary.managed_cold_p50_ms)} ` +
      `custom_cold_overhead_p50_ms=${ms(summary.custom_cold_overhead_p50_ms)} ` +
      `warm_overhead_p50_ms=${ms(summary.warm_overhead_p50_ms)} rps_c32=${Math.round(summary.rps_c32)} ` +
      `cold_vs_spawn=${summary.cold_vs_spawn.toFixed(2)}`,
  );
} finally {
  await host.close();
  await rm(home, { recursive: true, force: true });
}
