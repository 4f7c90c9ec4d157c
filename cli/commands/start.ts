import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import { describeZodError } from "../../common/app-config.ts";
import { DEFAULT_PORT, ENV, LOOPBACK } from "../../common/consts.ts";
import {
  homePaths,
  loadOrCreateInternalToken,
  readLocalJson,
  runletHome,
  writePrivateFile,
} from "../../control-plane/home.ts";
import { CliError, type Command } from "../command.ts";
import {
  freePort,
  type Managed,
  portIsFree,
  startProcess,
  stopProcess,
  waitHealthy,
} from "../processes.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const READY_TIMEOUT_MS = 90_000;

const portsSchema = z.object({
  [ENV.controlPort]: z.coerce.number().int().min(1).max(65_535).default(DEFAULT_PORT.control),
  [ENV.apiPort]: z.coerce.number().int().min(1).max(65_535).default(DEFAULT_PORT.api),
  [ENV.hostPort]: z.coerce.number().int().min(1).max(65_535).default(DEFAULT_PORT.host),
});

function requireInstalled() {
  for (const dep of ["wrangler", "tsx", "@libsql/client", "hono"]) {
    if (!existsSync(join(ROOT, "node_modules", dep, "package.json"))) {
      throw new CliError(
        `dependency '${dep}' is not installed: run \`npm install\` in ${ROOT} first`,
      );
    }
  }
}

export const start: Command = {
  name: "start",
  summary: "start the control plane, runtime host and worker locally",
  usage: `Usage: runlet start [--verbose] [--inspect] [--json]

Starts the three components on loopback, waits until each answers, prints their addresses and
a ready line, and stops them all on Ctrl-C. State lives in RUNLET_HOME (default ./.runlet).
Ports: RUNLET_CONTROL_PORT (${DEFAULT_PORT.control}), RUNLET_API_PORT (${DEFAULT_PORT.api}), RUNLET_HOST_PORT (${DEFAULT_PORT.host}).
--verbose copies every component's output to this terminal (it always goes to RUNLET_HOME/logs/)
and has the worker log a line per request.
--inspect runs the worker with \`wrangler dev\` and its devtools inspector (for debugging the
Worker; every request it sends out is slower then).
--json prints the ready line as one JSON object.`,
  options: { verbose: { type: "boolean", short: "v" }, inspect: { type: "boolean" } },
  async run({ values }) {
    requireInstalled();
    const parsed = portsSchema.safeParse(process.env);
    if (!parsed.success) throw new CliError(`bad port setting: ${describeZodError(parsed.error)}`);
    const ports = {
      control: parsed.data[ENV.controlPort],
      api: parsed.data[ENV.apiPort],
      host: parsed.data[ENV.hostPort],
    };
    const names = { control: ENV.controlPort, api: ENV.apiPort, host: ENV.hostPort } as const;
    for (const key of ["control", "api", "host"] as const) {
      if (!(await portIsFree(ports[key], LOOPBACK))) {
        throw new CliError(
          `port ${ports[key]} on ${LOOPBACK} is already in use: stop what holds it, or set ${names[key]} to a free port`,
        );
      }
    }

    const home = runletHome();
    const paths = homePaths(home);
    await mkdir(paths.logs, { recursive: true, mode: 0o700 });
    const internalToken = await loadOrCreateInternalToken(home);
    const url = {
      control: `http://${LOOPBACK}:${ports.control}`,
      api: `http://${LOOPBACK}:${ports.api}`,
      host: `http://${LOOPBACK}:${ports.host}`,
    };
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      [ENV.home]: home,
      [ENV.internalToken]: internalToken,
      [ENV.controlPort]: String(ports.control),
      [ENV.hostPort]: String(ports.host),
      [ENV.apiUrl]: url.api,
      [ENV.baseUrl]: url.control,
      [ENV.hostUrl]: url.host,
      WRANGLER_SEND_METRICS: "false",
      WRANGLER_LOG_PATH: paths.logs,
    };
    // Worker variables go through an env file (0600), so the internal token is not on a command line.
    const workerEnvFile = join(home, "worker.env");
    await writePrivateFile(
      workerEnvFile,
      // Locally, webhooks may go to a receiver on this machine.
      `CONTROL_PLANE_URL=${url.control}\nRUNTIME_HOST_URL=${url.host}\nINTERNAL_TOKEN=${internalToken}\nRUNLET_WEBHOOK_ALLOW_PRIVATE=1\n`,
    );
    const tsx = ["--import", "tsx"];
    const echo = values.verbose === true;
    const log = (name: string) => join(paths.logs, `${name}.log`);
    if (!values.json) console.error(`Starting Runlet (state in ${home})…`);

    const hostProc = startProcess(
      "runtime-host",
      process.execPath,
      [...tsx, "runtime-host/main.ts"],
      {
        cwd: ROOT,
        env,
        logFile: log("runtime-host"),
        echo,
      },
    );
    const controlProc = startProcess(
      "control-plane",
      process.execPath,
      [...tsx, "control-plane/server.ts"],
      {
        cwd: ROOT,
        env,
        logFile: log("control-plane"),
        echo,
      },
    );
    const workerArgs = [
      "--config",
      join(ROOT, "wrangler.toml"),
      "--ip",
      LOOPBACK,
      "--port",
      String(ports.api),
      "--env-file",
      workerEnvFile,
      "--persist-to",
      paths.wrangler,
      // wrangler's line per request costs the whole machine CPU on every call: --verbose.
      `--log-level=${echo ? "info" : "warn"}`,
    ];
    const workerProc = startProcess(
      "worker",
      process.execPath,
      values.inspect
        ? [
            // The `wrangler dev` command itself, with its devtools inspector (slower).
            join(ROOT, "node_modules/wrangler/bin/wrangler.js"),
            "dev",
            // The top-level Worker; `--env control-plane` is the control plane on Workers + D1.
            "--env=",
            "--inspector-port",
            String(await freePort()),
            "--show-interactive-dev-session=false",
            ...workerArgs,
          ]
        : [...tsx, "cli/worker-dev.ts", ...workerArgs],
      { cwd: ROOT, env, logFile: log("worker"), echo },
    );
    const procs: Managed[] = [hostProc, controlProc, workerProc];

    let stopping: Promise<void> | undefined;
    const stopAll = () => {
      stopping ??= Promise.all(procs.map((p) => stopProcess(p))).then(() => undefined);
      return stopping;
    };
    const onSignal = (signal: NodeJS.Signals) => {
      if (!values.json) console.error(`\n${signal}: stopping Runlet…`);
      stopAll().then(() => process.exit(0));
    };
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);

    const health = [
      ["runtime host", `${url.host}/healthz`, hostProc],
      ["control plane", `${url.control}/healthz`, controlProc],
      ["worker", `${url.api}/healthz`, workerProc],
    ] as const;
    const results = await Promise.all(
      health.map(([, u, p]) => waitHealthy(u, p, READY_TIMEOUT_MS)),
    );
    const failed = results.findIndex((r) => r !== "ready");
    if (failed !== -1) {
      const [label, , proc] = health[failed] as (typeof health)[number];
      await stopAll();
      const why =
        results[failed] === "exited"
          ? "exited during start"
          : `did not answer within ${READY_TIMEOUT_MS / 1000} s`;
      throw new CliError(
        `the ${label} ${why}. Its last lines (full log: ${log(proc.name)}):\n  ${proc.tail().slice(-12).join("\n  ")}`,
      );
    }

    const woken = await wakeRuns(url.api, internalToken);
    const local = await readLocalJson(home);
    if (values.json) {
      console.log(
        JSON.stringify({
          ready: true,
          baseUrl: url.control,
          apiUrl: url.api,
          hostUrl: url.host,
          home,
          projectId: local?.projectId,
          ...(woken ? { asyncRuns: woken } : {}),
        }),
      );
    } else {
      console.log(`  control plane  ${url.control}   (management API, {base_url})`);
      console.log(`  worker         ${url.api}   (run API, {api_url})`);
      console.log(`  runtime host   ${url.host}   (internal)`);
      console.log(`  credentials    ${paths.localJson} (project ${local?.projectId})`);
      console.log(`  logs           ${paths.logs}/`);
      if (woken) console.log(`  async runs     ${woken}`);
      console.log(
        'Runlet is ready. Try: npx runlet deploy examples/hello && npx runlet run hello --data \'{"name":"Ada"}\'',
      );
    }

    // Once ready, a component that dies takes the others down: a half-running Runlet helps no one.
    const first = await Promise.race(procs.map((p) => p.exited.then(() => p)));
    if (stopping) return 0;
    console.error(
      `runlet: the ${first.name} stopped unexpectedly (log: ${log(first.name)}); stopping the rest.`,
    );
    await stopAll();
    return 1;
  },
};

/**
 * Wakes the run store once everything answers: queued runs are handed over and running ones
 * checked at once. The local runtime does not bring a Durable Object's alarm back after a
 * restart, so without this a run accepted before a crash would wait for the next request.
 * Says what it found, or why it could not (the start goes on: the next request wakes nothing).
 */
async function wakeRuns(apiUrl: string, internalToken: string): Promise<string | undefined> {
  try {
    const res = await fetch(`${apiUrl}/internal/wake`, {
      method: "POST",
      headers: { authorization: `Bearer ${internalToken}` },
      signal: AbortSignal.timeout(30_000),
    });
    const body = (await res.json().catch(() => ({}))) as {
      queued?: number;
      running?: number;
      failed?: number;
    };
    const { queued = 0, running = 0, failed = 0 } = body;
    if (!res.ok && !failed) return `could not be resumed: the worker answered ${res.status}`;
    const resumed = `${queued} queued and ${running} running resumed`;
    if (failed) return `${resumed}; ${failed} shard(s) could not be woken (see the worker's log)`;
    return queued + running > 0 ? resumed : undefined;
  } catch (err) {
    return `could not be resumed: ${(err as Error).message}`;
  }
}
