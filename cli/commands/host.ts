import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { ENV } from "../../common/consts.ts";
import { parseHttpUrl } from "../../common/http-url.ts";
import { makeFolders } from "../../common/make-folders.ts";
import { runletHome } from "../../control-plane/home.ts";
import { CliError, type Command, takesOnly, wholeNumberFlag } from "../command.ts";
import { claimHome } from "../home-lock.ts";
import { unwritable } from "../home-setup.ts";
import { ROOT } from "./start.ts";

const USAGE = `Usage: runlet host --control-plane URL [--address URL] [--listen IP] [--port N]
                   [--name NAME] [--slots N] [--json]
       (with RUNLET_HOST_TOKEN set to a host token)

Runs a runtime host on this machine that joins the Runlet whose control plane is at URL: it
registers, heartbeats every 2 s, and takes the work the Worker places on it. The token comes
from 'runlet hosts token' on the operator's side. Ctrl-C stops it gracefully (work in flight
gets up to 10 s). See docs/hosts.md.

  --control-plane   the control plane's URL ({base_url})
  --address         the URL the Worker reaches this host at (default
                    http://127.0.0.1:PORT: this machine only)
  --listen          the IP address to listen on (default: --address's, when that is an IP
                    address; else 127.0.0.1, for a tunnel or proxy on this machine)
  --port            the port to listen on, 0 to 65535 (default: --address's port, else 8790;
                    0: any free one)
  --name            how the host is listed (default: this machine's name)
  --slots           replicas it runs at once, 1 to 100000 (default: one per 256 MiB of memory,
                    at most 256)
  --json            stdout holds one JSON object, once it has joined: {ready: true, hostUrl,
                    hostId, controlPlane}; or {message} if it stopped before; its log lines
                    go to stderr

Its memory is the machine's unless RUNLET_HOST_MEMORY_MB says its share (machines it shares).

State (app versions, spare replicas, the logs of its latest runs, kept across its restarts)
lives under RUNLET_HOME (default .runlet), which one runlet start or runlet host holds at a
time: beside a runlet start in the same folder, give this host a home of its own
(RUNLET_HOME=/var/lib/runlet-host npx runlet host ...).`;

export const host: Command = {
  name: "host",
  summary: "run a runtime host that joins a control plane (another machine)",
  usage: USAGE,
  options: {
    "control-plane": { type: "string" },
    address: { type: "string" },
    listen: { type: "string" },
    port: { type: "string" },
    name: { type: "string" },
    slots: { type: "string" },
  },
  async run({ values, positionals }) {
    // It takes no words: a stray one (a value without its option) was ignored.
    takesOnly("host", { values: {}, words: positionals }, {}, USAGE);
    const controlPlane = values["control-plane"];
    if (typeof controlPlane !== "string" || !URL.canParse(controlPlane))
      throw new CliError(`--control-plane must be the control plane's URL\n\n${USAGE}`);
    // Checked here, before the home is claimed or the host started: `--port abc` started a host
    // that said "bad environment: RUNLET_HOST_PORT: …", a variable the user never set.
    const flag = (name: "port" | "slots", least: number, most: number, takes: string) => {
      const text = values[name];
      if (text !== undefined) wholeNumberFlag(`--${name}`, String(text), least, most, takes, USAGE);
    };
    flag("port", 0, 65_535, "a port number from 0 to 65535 (0: any free one)");
    flag("slots", 1, 100_000, "a whole number from 1 to 100000: the replicas it runs at once");
    if (!process.env[ENV.hostToken])
      throw new CliError(
        `set ${ENV.hostToken} to a host token (an operator makes one: runlet hosts token --name NAME)`,
      );
    // Its own home, held while it runs: a second host there would clear this one's spares.
    const home = runletHome();
    try {
      makeFolders(home);
    } catch (err) {
      throw unwritable(home, err as NodeJS.ErrnoException);
    }
    claimHome(home);
    const address = values.address;
    // A mistyped --address was a TypeError's stack trace.
    if (address !== undefined && !parseHttpUrl(String(address)))
      throw new CliError(
        `--address must be the http(s) URL the Worker reaches this host at (got '${address}')\n\n${USAGE}`,
      );
    const port = values.port ?? (address ? new URL(String(address)).port : undefined);
    if (address === undefined && !onLoopback(controlPlane))
      console.error(
        `Note: no --address: this host registers at http://127.0.0.1:${port ?? 8790}, which only a Worker on this machine reaches. On another machine, give --address http://<its address>:${port ?? 8790}.`,
      );
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      [ENV.home]: home,
      [ENV.baseUrl]: controlPlane.replace(/\/+$/, ""),
      ...(address ? { [ENV.hostAddress]: String(address) } : {}),
      ...(values.listen ? { [ENV.hostListen]: String(values.listen) } : {}),
      ...(port ? { [ENV.hostPort]: String(port) } : {}),
      ...(values.name ? { [ENV.hostName]: String(values.name) } : {}),
      ...(values.slots ? { [ENV.hostSlots]: String(values.slots) } : {}),
    };
    // The host decides the rest (and says what is wrong with a setting) in runtime-host/main.ts.
    // Its stdin is the pipe it watches, as under `runlet start` (common/parent-watch.ts): never
    // written to nor closed here, it closes only when this process ends, however it ends, and
    // the host then stops. With the terminal as its stdin, a SIGKILLed command left the host
    // running on, an orphan holding its port. In a process group of its own, as `runlet start`'s
    // components: the terminal's Ctrl-C reaches this command only, which passes it on once; in
    // the terminal's group the host had it twice, and a second signal ends its grace at once.
    const child = spawn(process.execPath, ["bin/run-ts.mjs", "runtime-host/main.ts"], {
      cwd: ROOT,
      env: { ...env, [ENV.supervised]: "1" },
      stdio: ["pipe", values.json ? "pipe" : "inherit", "inherit"],
      detached: true,
    });
    child.stdin?.on("error", () => {});
    const forward = (signal: NodeJS.Signals) => child.kill(signal);
    process.on("SIGINT", forward);
    process.on("SIGTERM", forward);
    const ready = values.json && child.stdout ? readyAsJson(child.stdout) : undefined;
    return new Promise<number>((resolve) =>
      child.on("exit", (code, signal) => {
        const exit = code ?? (signal ? 1 : 0);
        // --json: one document on stdout however it ends (it printed the host's text lines).
        if (ready && !ready.told)
          console.log(
            JSON.stringify({
              message: `the runtime host stopped before it was ready (${signal ?? `exit ${exit}`}): its reason is on stderr`,
            }),
          );
        resolve(exit);
      }),
    );
  },
};

/**
 * `--json`: the host's ready line (runtime-host/main.ts: "runtime host listening on URL (host ID
 * of CONTROL_PLANE)") as one JSON object on stdout, as `runlet start --json` prints its own; the
 * host's other lines go to stderr. `told` once it was printed.
 */
function readyAsJson(out: NodeJS.ReadableStream): { told: boolean } {
  const state = { told: false };
  const lines = createInterface({ input: out });
  lines.on("line", (line) => {
    const joined = /^runtime host listening on (\S+)(?: \(host (\S+) of (\S+)\))?$/.exec(line);
    if (state.told || !joined) return void process.stderr.write(`${line}\n`);
    state.told = true;
    const [, hostUrl, hostId, controlPlane] = joined;
    console.log(
      JSON.stringify({
        ready: true,
        hostUrl,
        hostId: hostId ?? null,
        controlPlane: controlPlane ?? null,
      }),
    );
  });
  return state;
}

/** Whether `url` names this machine's loopback (a control plane beside this host). */
function onLoopback(url: string): boolean {
  const host = URL.canParse(url) ? new URL(url).hostname : "";
  return host === "localhost" || host === "[::1]" || /^127\./.test(host);
}
