import { existsSync } from "node:fs";
import { totalmem } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { DEFAULT_PORT, ENV, HOST_REFUSED_EXIT, LOOPBACK } from "../../common/consts.ts";
import { watchSupervisor } from "../../common/parent-watch.ts";
import {
  homePaths,
  readLocalJson,
  runletHome,
  writePrivateFile,
} from "../../control-plane/home.ts";
import { sweepNamespaces } from "../../runtime-host/sandbox/network.ts";
import { DEFAULT_UID_BASE, UID_COUNT, unmountUnder } from "../../runtime-host/sandbox/users.ts";
import { CliError, type Command, takesOnly } from "../command.ts";
import { refuseHeldHome } from "../home-lock.ts";
import { prepareHome } from "../home-setup.ts";
import { logLimitsFrom, watchLogSize } from "../log-files.ts";
import { freePort, portIsFree, startProcess } from "../processes.ts";
import { readyLine } from "../ready-line.ts";
import { MAX_HOSTS, PORT_SETTINGS, startSettingsFrom, testKnobs } from "../start-settings.ts";
import { Supervisor } from "../supervisor.ts";
import { wakeRuns } from "../wake.ts";

export const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const READY_TIMEOUT_MS = 90_000;

/** A runtime host the control plane refused (its token, `local`, revoked) stays stopped. */
const refused = (how: string) =>
  how === `code ${HOST_REFUSED_EXIT}`
    ? "the control plane refused it: its host token 'local' was revoked; the next 'runlet start' makes a new one"
    : undefined;

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

Starts the three components on loopback (but see RUNLET_LISTEN), waits until each answers, prints their addresses and
a ready line, and stops them all on Ctrl-C (the runtime host gets up to 10 s for work in flight;
a second Ctrl-C ends that grace). Once ready, a component that exits by itself is
restarted (after 250 ms, doubling up to 5 s while it keeps failing); one that exits 5 times
within a minute stops them all. The components end by themselves if this command is killed.
State lives in RUNLET_HOME (default ./.runlet).
Ports: RUNLET_CONTROL_PORT (${DEFAULT_PORT.control}), RUNLET_API_PORT (${DEFAULT_PORT.api}), RUNLET_HOST_PORT (${DEFAULT_PORT.host}).
RUNLET_HOSTS=N runs N runtime hosts (default 1, at most ${MAX_HOSTS}): the first at RUNLET_HOST_PORT, the
others at the ports after it (a free port where one is taken), their state in RUNLET_HOME/hosts/N,
each with 1/N of the machine's memory and replica slots; the Worker places work over all.
RUNLET_LISTEN=<IPv4 address of this machine> has the control plane and the run API listen there
instead of 127.0.0.1 (and be known by it), so runtime hosts on other machines can join
(\`runlet host\`) and report the ends of async runs; the hosts it runs stay on loopback. Webhooks
to private and loopback addresses are then refused unless RUNLET_WEBHOOK_ALLOW_PRIVATE=1.
--verbose copies every component's output to this terminal (it always goes to RUNLET_HOME/logs/,
each log rotated at RUNLET_LOG_MAX_BYTES, 10 MiB, keeping RUNLET_LOG_KEEP, 3, older files: .1, .2, …)
and has the worker log a line per request (through wrangler's dev proxy, which costs CPU on each).
--inspect runs the worker with \`wrangler dev\` and its devtools inspector (for debugging the
Worker; every request it sends out is slower then, and passes wrangler's dev proxy).
--json prints the ready line as one JSON object.`,
  options: { verbose: { type: "boolean", short: "v" }, inspect: { type: "boolean" } },
  async run({ values, positionals }) {
    // It takes no words: a stray one (a value without its option) was ignored.
    takesOnly("start", { values: {}, words: positionals }, {}, start.usage);
    requireInstalled();
    const settings = startSettingsFrom(process.env);
    if (typeof settings === "string") throw new CliError(`bad setting: ${settings}`);
    const { ports, listen } = settings;
    const logLimits = logLimitsFrom(process.env); // RUNLET_HOME/logs: log-files.ts
    if (typeof logLimits === "string") throw new CliError(`bad setting: ${logLimits}`);
    // The control plane and the run API at RUNLET_LISTEN (loopback unless set); the hosts it
    // runs on loopback, where only this machine's Worker calls them.
    const addressOf = { control: listen, api: listen, host: LOOPBACK };
    const home = runletHome();
    // A start already running on this home holds its ports too: that, not the ports, is said.
    refuseHeldHome(home);
    for (const key of ["control", "api", "host"] as const) {
      if (!(await portIsFree(ports[key], addressOf[key]))) {
        throw new CliError(
          `port ${ports[key]} on ${addressOf[key]} is already in use: stop what holds it, or set ${PORT_SETTINGS[key]} to a free port`,
        );
      }
    }

    const paths = homePaths(home);
    // Its folders, the pid file (one start per home) and the tokens, or one line saying why not.
    const internalToken = await prepareHome(home);
    // A file, read by the host at each registration: the control plane replaces a revoked
    // token as it starts, which may be after the host has started.
    // A RUNLET_HOST_TOKEN in the shell (for `runlet host` elsewhere) is not theirs: left out.
    const hostToken = () => ({ [ENV.hostTokenFile]: paths.hostToken, [ENV.hostToken]: undefined });
    const at = (key: keyof typeof addressOf) => `http://${addressOf[key]}:${ports[key]}`;
    const url = { control: at("control"), api: at("api"), host: at("host") };
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      [ENV.home]: home,
      [ENV.internalToken]: internalToken,
      // Set in this shell for 'runlet init' elsewhere, it would cost this control plane its local owner.
      [ENV.bootstrapToken]: undefined,
      [ENV.controlPort]: String(ports.control),
      [ENV.listen]: listen,
      [ENV.hostPort]: String(ports.host),
      [ENV.apiUrl]: url.api,
      [ENV.baseUrl]: url.control,
      [ENV.hostUrl]: url.host,
      WRANGLER_SEND_METRICS: "false",
      // Nor does workerd's runtime fetch a Request.cf sample from workers.cloudflare.com at each
      // start (the Worker reads no request.cf): offline, worker.log began with a warning and a
      // stack trace (getaddrinfo ENOTFOUND) at every start of the Worker.
      CLOUDFLARE_CF_FETCH_ENABLED: "false",
      // One file (a path ending in .log): a folder got a new wrangler-{time}.log at each start
      // of the Worker, its restarts included, and none was ever removed.
      WRANGLER_LOG_PATH: join(paths.logs, "wrangler.log"),
    };
    // Worker variables go through an env file (0600), so the internal token is not on a command line.
    const workerEnvFile = join(home, "worker.env");
    // Webhooks to private and loopback addresses: on loopback only (a receiver on this machine).
    // Where RUNLET_LISTEN opens the run API to a network, any token holder there could have the
    // Worker POST to this machine's loopback services (docs/deploy.md: leave it unset when exposed),
    // unless RUNLET_WEBHOOK_ALLOW_PRIVATE=1 asks for it.
    const allowPrivate = listen === LOOPBACK || process.env[ENV.webhookAllowPrivate] === "1";
    await writePrivateFile(
      workerEnvFile,
      // Locally, webhooks may go to a receiver on this machine. Tests may stretch the pauses
      // between delivery attempts and shorten the health checks of a silent host (testKnobs).
      `CONTROL_PLANE_URL=${url.control}\nRUNTIME_HOST_URL=${url.host}\nWORKER_URL=${url.api}\nINTERNAL_TOKEN=${internalToken}\nRUNLET_WEBHOOK_ALLOW_PRIVATE=${allowPrivate ? 1 : 0}\n${testKnobs()}`,
    );
    // Each component's TypeScript compiled as the CLI's is (bin/compiled.mjs).
    const runTs = join(ROOT, "bin", "run-ts.mjs");
    const echo = values.verbose === true;
    const log = (name: string) => join(paths.logs, `${name}.log`);
    if (!values.json) console.error(`Starting Runlet (state in ${home})…`);

    const node =
      (name: string, script: string, extra: string[] = [], more = () => ({})) =>
      () =>
        startProcess(name, process.execPath, [runTs, script, ...extra], {
          cwd: ROOT,
          env: { ...env, ...more() },
          logFile: log(name),
          echo,
          logLimits,
        });
    const workerArgs = [
      "--config",
      join(ROOT, "wrangler.toml"),
      "--ip",
      listen,
      "--port",
      String(ports.api),
      "--env-file",
      workerEnvFile,
      "--persist-to",
      paths.wrangler,
      // wrangler's line per request costs the whole machine CPU on every call: --verbose.
      `--log-level=${echo ? "info" : "warn"}`,
      // The `wrangler dev` command itself, with its devtools inspector (slower).
      ...(values.inspect ? ["--inspect", "--inspector-port", String(await freePort())] : []),
    ];
    // Host 1 at RUNLET_HOST_PORT with its state in RUNLET_HOME (as with one host); host N at
    // RUNLET_HOST_PORT+N-1 (a free port if that one is taken), each with a folder of its own
    // (RUNLET_HOME/hosts/N). All join the registry; at the same address after a restart, each
    // keeps its id (on ports the OS picked, every restart added a host to \`runlet hosts\`).
    const hostCount = settings.hosts;
    // Hosts on one machine share its memory, and so its slots (one per 256 MiB): each claimed
    // all of it, and N hosts took N times the replicas the machine holds.
    const share =
      hostCount > 1 && !process.env[ENV.hostMemoryMb]
        ? { [ENV.hostMemoryMb]: String(Math.floor(totalmem() / 2 ** 20 / hostCount)) }
        : {};
    const uidBase = Number(process.env[ENV.sandboxUidBase]) || DEFAULT_UID_BASE;
    const extraHosts: Array<{ n: number; port: number; home: string }> = [];
    for (let n = 2; n <= hostCount; n++) {
      const next = ports.host + n - 1;
      const taken = next > 65_535 || next === ports.control || next === ports.api;
      const port = !taken && (await portIsFree(next, LOOPBACK)) ? next : await freePort();
      extraHosts.push({ n, port, home: join(home, "hosts", String(n)) });
    }
    const wake = async () => {
      const woken = await wakeRuns(url.api, internalToken, paths.wrangler);
      if (woken && !values.json) console.error(`runlet: async runs ${woken}`);
    };
    const supervisor = new Supervisor(
      [
        {
          name: "runtime-host",
          label: "runtime host",
          healthUrl: `${url.host}/healthz`,
          start: node("runtime-host", "runtime-host/main.ts", [], () => ({
            ...hostToken(),
            ...share,
            [ENV.hostName]: "local-1",
          })),
          // Its own grace for work in flight (10 s), then its replicas' stop.
          stopGraceMs: 20_000,
          // First, while the Worker still takes the ends of its async runs.
          stopOrder: 0,
          // Runs the lost host held are found out now, not at the watchdog's next round.
          restarted: wake,
          forGood: refused,
        },
        ...extraHosts.map(({ n, port, home: hostHome }) => ({
          name: `runtime-host-${n}`,
          label: `runtime host ${n}`,
          healthUrl: `http://${LOOPBACK}:${port}/healthz`,
          start: node(`runtime-host-${n}`, "runtime-host/main.ts", [], () => ({
            ...hostToken(),
            ...share,
            [ENV.hostName]: `local-${n}`,
            [ENV.home]: hostHome,
            // Replica users of its own: hosts on one machine never share a uid.
            [ENV.sandboxUidBase]: String(uidBase + (n - 1) * UID_COUNT),
            [ENV.hostPort]: String(port),
          })),
          stopGraceMs: 20_000,
          stopOrder: 0,
          restarted: wake,
          forGood: refused,
        })),
        {
          name: "control-plane",
          label: "control plane",
          healthUrl: `${url.control}/healthz`,
          start: node("control-plane", "control-plane/server.ts"),
          stopGraceMs: 5_000,
          stopOrder: 1,
        },
        {
          name: "worker",
          label: "worker",
          healthUrl: `${url.api}/healthz`,
          start: node("worker", "cli/worker-dev.ts", workerArgs),
          stopGraceMs: 5_000,
          stopOrder: 1,
          // The local runtime does not set a Durable Object's alarm again after a restart.
          restarted: wake,
        },
      ],
      { logDir: paths.logs, readyTimeoutMs: READY_TIMEOUT_MS, logLimits },
    );
    // wrangler writes its own log by name: looked at each minute, rotated as the others are.
    const stopWatching = watchLogSize(join(paths.logs, "wrangler.log"), logLimits);

    let signals = 0;
    const onSignal = (signal: NodeJS.Signals) => {
      // A second signal ends the runtime host's grace for work in flight (docs/api.md).
      const again = signals++ > 0;
      if (!values.json)
        console.error(`\n${signal}: stopping Runlet${again ? " now, without the grace" : "…"}`);
      (again ? supervisor.hurry() : supervisor.stop()).then(() => process.exit(0));
    };
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
    // Started by a supervisor of its own (RUNLET_SUPERVISED=1, its pipe as stdin: a test's
    // process), it stops as on SIGTERM once that supervisor is gone, however it went.
    watchSupervisor(() => onSignal("SIGTERM"));

    const failed = await supervisor.ready();
    if (failed) throw new CliError(failed);

    const woken = await wakeRuns(url.api, internalToken, paths.wrangler);
    const local = await readLocalJson(home);
    if (values.json) {
      console.log(
        JSON.stringify({
          ready: true,
          baseUrl: url.control,
          apiUrl: url.api,
          hostUrl: url.host,
          hostUrls: [url.host, ...extraHosts.map(({ port }) => `http://${LOOPBACK}:${port}`)],
          home,
          projectId: local?.projectId,
          ...(woken ? { asyncRuns: woken } : {}),
        }),
      );
    } else {
      console.log(`  control plane  ${url.control}   (management API, {base_url})`);
      console.log(`  worker         ${url.api}   (run API, {api_url})`);
      console.log(`  runtime host   ${url.host}   (internal)`);
      for (const { n, port } of extraHosts)
        console.log(`  runtime host ${n} http://${LOOPBACK}:${port}   (internal)`);
      console.log(`  credentials    ${paths.localJson} (project ${local?.projectId})`);
      console.log(`  logs           ${paths.logs}/`);
      if (woken) console.log(`  async runs     ${woken}`);
      console.log(readyLine(process.cwd(), ROOT, home));
    }

    // From here on a component that exits is restarted; one that keeps failing stops them all.
    const code = await supervisor.run();
    await supervisor.stop();
    stopWatching();
    // A host that kept failing left its replicas' folders mounted and their networks behind
    // (its next start would reclaim them; there may be none).
    if (code !== 0) {
      unmountUnder(home);
      sweepNamespaces();
    }
    return code;
  },
};
