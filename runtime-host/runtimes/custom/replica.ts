/**
 * A custom-runtime replica: the app's own HTTP server, started from its `entrypoint` with `PORT`
 * set, ready once its `healthcheck` path answers 2xx. The host proxies requests to `origin`.
 *
 * In a sandbox with a network of its own the app listens on `[custom] port` of its own
 * loopback, which only it can reach; a relay in the sandbox (relay.mjs) connects it to a Unix
 * socket in a folder the host shares with that sandbox alone, which the host reaches through a
 * link of its own (`socketPath`, pinned-socket.ts: never a symlink the app put there). Replicas that
 * share the host's network each get a free loopback port instead.
 */
import { spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { AppConfig } from "../../../common/app-config.ts";
import { LOOPBACK } from "../../../common/consts.ts";
import { exitOf } from "../../../common/exit-status.ts";
import { LOG_RING_BYTES } from "../../limits.ts";
import { LogRing } from "../../pool/log-ring.ts";
import { type ExitStatus, ReplicaProcess } from "../../pool/replica-process.ts";
import {
  adoptFiles,
  type Broken,
  copyVersion,
  type HttpWorkload,
  hostFailure,
  readSecrets,
  startLimitMs,
  WorkloadError,
  type WorkloadSpec,
} from "../../pool/workload.ts";
import { NO_SANDBOX, SANDBOX_RUN_DIR, type Sandbox } from "../../sandbox/sandbox.ts";
import { FALLBACK_PATH } from "../managed/launch.ts";
import { customEnv, freePort, launchScript } from "./launch.ts";
import { accepts, healthy, pinSocket, unpinSocket } from "./pinned-socket.ts";
import { lastWordsOf, neverHealthyDetail } from "./start-failure.ts";

export interface CustomSpec extends WorkloadSpec {
  config: Pick<AppConfig, "custom">;
}

export interface CustomReplicaOptions {
  /** The start limit of an app whose spec has no `startTimeout`. */
  startTimeoutMs: number;
  stopGraceMs: number;
  /** Where the app's server runs (default: a plain process). */
  sandbox?: Sandbox;
}

/**
 * Between two readiness probes: short, since the probe is what a cold start waits on. Until the
 * port takes connections a probe is a bare connect (cheap to refuse); then the healthcheck.
 */
const CONNECT_INTERVAL_MS = 1;
const PROBE_INTERVAL_MS = 5;
/**
 * How long a healthcheck may answer that its path is not served (404, 405, 501) before the
 * start fails: a server with no such route (a Python http.server without `/health`) made each
 * call wait the whole start timeout, 30 s, for its 502.
 */
const NOT_SERVED_MS = 1_000;
const NOT_SERVED = /^it answered (404|405|501)$/;

/**
 * How long a replica whose server broke a request off may take to exit by itself before it is
 * killed: a process that died mid-request (os._exit(3)) breaks its connections as it goes.
 */
const EXIT_AFTER_BREAK_MS = 1_000;

const RELAY_PATH = fileURLToPath(new URL("./relay.mjs", import.meta.url));

export class CustomReplica implements HttpWorkload {
  readonly kind = "http";
  readonly logs = new LogRing(LOG_RING_BYTES);
  readonly #process = new ReplicaProcess();
  #origin = "";
  /** The relay's socket in the folder shared with the sandbox (the app may change it). */
  #relaySocket: string | undefined;
  /** The host's link to the relay's socket, once made (see pinned-socket.ts). */
  #socketPath: string | undefined;
  #spawned: Promise<void> | undefined;
  #started: Promise<void> | undefined;
  /** The app folder as the app sees it (set by the sandbox). */
  #appDir = "";
  #secretsRevision: number | undefined;
  /** Gives the app's files copied into its folder to the replica's sandbox user. */
  #adopt: () => Promise<void> = async () => {};

  constructor(
    public spec: CustomSpec,
    private readonly options: CustomReplicaOptions,
  ) {}

  /** `http://127.0.0.1:{port}` of the app's server, once started (or of its relay's socket). */
  get origin(): string {
    return this.#origin;
  }

  /** The relay's Unix socket, for a replica with a network of its own; else undefined. */
  get socketPath(): string | undefined {
    return this.#socketPath;
  }

  get secretsRevision(): number | undefined {
    return this.#secretsRevision;
  }

  get pid(): number | undefined {
    return this.#process.pid;
  }

  get exited(): boolean {
    return this.#process.exited;
  }

  get exitStatus(): ExitStatus | undefined {
    return this.#process.exitStatus;
  }

  get accepting(): boolean {
    return !this.#process.exited && !this.#process.stopping;
  }

  onExit(listener: () => void): void {
    this.#process.onExit(listener);
  }

  start(): Promise<void> {
    this.#started ??= this.startSpare().then(() => this.#launch());
    return this.#started;
  }

  /**
   * Starts the replica's sandbox before its app is known: a shell in it waits on stdin for the
   * script that sets the app's environment and execs its entrypoint (see `#launch`). Costly
   * parts of a start (the sandbox, its cgroup, the limits) are paid here, ahead of a cold start.
   */
  startSpare(): Promise<void> {
    this.#spawned ??= this.#spawn();
    return this.#spawned;
  }

  /**
   * Makes a spare the replica of `spec`: `start()` copies the version's files into the spare's
   * own folder (the app writes there, never into the deployed version) and starts the app.
   */
  assign(spec: CustomSpec): this {
    const slot = this.spec.dir;
    this.spec = { ...spec, dir: slot };
    this.#started = this.startSpare()
      .then(() => copyVersion(spec.dir, slot, () => void this.stop())) // its sandbox goes too
      .then(() => adoptFiles(this.#adopt))
      .then(() => this.#launch());
    return this;
  }

  async #spawn(): Promise<void> {
    const sandbox = this.options.sandbox ?? NO_SANDBOX;
    const runDir = `${this.spec.dir}.run`;
    // The relay starts with the sandbox; the shell then waits for the app.
    const [command, args, options] = sandbox.isolatesNetwork
      ? [
          "/bin/sh",
          ["-c", `"$0" "$1" ${SANDBOX_RUN_DIR} & exec /bin/sh -s`, process.execPath, RELAY_PATH],
          { readOnly: [dirname(RELAY_PATH)], runDir },
        ]
      : ["/bin/sh", ["-s"], {}];
    const { appDir, adopt, cleanup, ...wrapped } = await sandbox
      .wrap(command, args, this.spec.dir, { ...options, stdio: ["pipe", "pipe", "pipe"] })
      .catch((err: Error) => {
        this.#process.exitedWith(null, null);
        throw hostFailure(`cannot start its sandbox: ${err.message}`);
      });
    this.#appDir = appDir;
    this.#adopt = adopt;
    if (sandbox.isolatesNetwork) this.#relaySocket = join(runDir, "http.sock");
    const child = spawn(wrapped.command, wrapped.args, {
      cwd: this.spec.dir,
      env: { PATH: process.env.PATH || FALLBACK_PATH, HOME: appDir },
      stdio: wrapped.stdio,
      // Its own process group: stopping the replica stops whatever it spawned.
      detached: true,
    });
    const pinned = `${this.spec.dir}.sock`;
    child.once("exit", () => unpinSocket(pinned));
    child.once("exit", cleanup);
    child.once("error", cleanup);
    // A replica that exits before its script is written must not take the host down.
    child.stdin?.on("error", () => {});
    this.#process.attach(child, wrapped.ownProcesses);
    child.stdout?.on("data", (data: Buffer) => this.logs.read("stdout", data));
    child.stderr?.on("data", (data: Buffer) => this.logs.read("stderr", data));
    await new Promise<void>((resolve, reject) => {
      child.once("spawn", resolve);
      child.once("error", (err) =>
        reject(
          hostFailure(
            `cannot start its sandbox: ${(err as NodeJS.ErrnoException).code ?? err.message}`,
          ),
        ),
      );
    });
  }

  /** Gives the waiting shell the app's environment and entrypoint, then waits until healthy. */
  async #launch(): Promise<void> {
    const custom = this.spec.config.custom;
    if (!custom) throw new WorkloadError({ kind: "load-failed", detail: "no [custom] table" });
    const relayed = this.#relaySocket !== undefined;
    const port = relayed ? custom.port : await freePort();
    this.#origin = `http://${LOOPBACK}:${port}`;
    const secrets = await readSecrets(this.spec);
    this.#secretsRevision = secrets.revision;
    const env = customEnv(this.spec, this.#appDir, secrets.env, port);
    // The relay reads the port when its first connection comes.
    const tellRelay = relayed ? `echo ${port} > ${SANDBOX_RUN_DIR}/port\n` : "";
    this.#process.child?.stdin?.end(tellRelay + launchScript(env, custom.entrypoint));
    await this.#waitUntilHealthy(custom.healthcheck, port);
  }

  /** Whether the app (or its relay, once the host has pinned its socket) accepts connections. */
  async #accepts(port: number): Promise<boolean> {
    if (!this.#relaySocket) return accepts({ port });
    if (!this.#socketPath) {
      const pinned = `${this.spec.dir}.sock`;
      if (!pinSocket(this.#relaySocket, pinned)) return false;
      this.#socketPath = pinned;
    }
    return accepts({ socketPath: this.#socketPath });
  }

  /** Probes the healthcheck until it answers 2xx; fails if the process ends or time runs out. */
  async #waitUntilHealthy(path: string, port: number): Promise<void> {
    const limitMs = startLimitMs(this.spec.startTimeout, this.options.startTimeoutMs);
    const deadline = Date.now() + limitMs;
    let listening = false;
    let last = "no answer";
    let notServedSince: number | undefined;
    for (;;) {
      if (this.#process.exited) {
        const lastWords = lastWordsOf(this.logs.text());
        throw new WorkloadError({
          kind: "load-failed",
          detail: `its process exited before it was healthy (${exitOf(this.#process.status)})${lastWords ? `: ${lastWords}` : ""}`,
        });
      }
      listening ||= await this.#accepts(port);
      if (listening) {
        const probed = await healthy(`${this.#origin}${path}`, this.#socketPath);
        if (probed === true) return;
        last = probed;
        notServedSince = NOT_SERVED.test(probed) ? (notServedSince ?? Date.now()) : undefined;
      }
      if (notServedSince !== undefined && Date.now() - notServedSince >= NOT_SERVED_MS) {
        this.#process.signal("SIGKILL");
        throw new WorkloadError({
          kind: "load-failed",
          detail: `its healthcheck ${path} ${last.slice(3)}: serve GET ${path} with a 2xx, or set [custom] healthcheck to a path it answers`,
        });
      }
      if (Date.now() > deadline) {
        this.#process.signal("SIGKILL");
        const output = this.logs.text();
        throw new WorkloadError({
          kind: "load-failed",
          detail: neverHealthyDetail({ path, port, limitMs, last, output }),
        });
      }
      await new Promise((r) => setTimeout(r, listening ? PROBE_INTERVAL_MS : CONNECT_INTERVAL_MS));
    }
  }

  stop(): Promise<void> {
    return this.#process.stop(this.options.stopGraceMs);
  }

  /**
   * A request on it broke before any answer. Its server may be gone, or may have closed that
   * one connection: Python's http.server does so for a handler that raised, and that cost every
   * other request in flight on the replica, and a cold start. It is stopped unless its
   * healthcheck still answers 2xx; a server gone whose process is ending is given a moment to
   * exit by itself first, as its own exit status says more than our SIGKILL.
   */
  async broke(): Promise<Broken> {
    const path = this.spec.config.custom?.healthcheck ?? "/health";
    const serves =
      !this.#process.exited && (await healthy(`${this.#origin}${path}`, this.#socketPath)) === true;
    if (serves) return { serves };
    const stopping = this.#process.stopping; // the host's own stop: its exit is no news
    if (!stopping && (await this.#process.exitsWithin(EXIT_AFTER_BREAK_MS)))
      return { serves, exited: this.#process.status };
    this.#process.abandon();
    return { serves };
  }
}
