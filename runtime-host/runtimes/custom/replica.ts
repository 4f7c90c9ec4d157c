/**
 * A custom-runtime replica: the app's own HTTP server, started from its `entrypoint` with `PORT`
 * set to a free loopback port of its own (replicas share the host's network, so each gets its
 * port; `[custom] port` is the app's default elsewhere). Ready once its `healthcheck` path
 * answers 2xx. The host proxies requests to `origin`.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:net";
import type { AppConfig } from "../../../common/app-config.ts";
import { LOOPBACK } from "../../../common/consts.ts";
import { LOG_RING_BYTES } from "../../limits.ts";
import { LogRing } from "../../pool/log-ring.ts";
import {
  type CallOutcome,
  type Workload,
  WorkloadError,
  type WorkloadSpec,
} from "../../pool/workload.ts";
import { NO_SANDBOX, type Sandbox } from "../../sandbox/sandbox.ts";
import { managedEnv } from "../managed/launch.ts";

export interface CustomSpec extends WorkloadSpec {
  config: Pick<AppConfig, "custom">;
}

export interface CustomReplicaOptions {
  startTimeoutMs: number;
  stopGraceMs: number;
  /** Where the app's server runs (default: a plain process). */
  sandbox?: Sandbox;
}

/** Between two readiness probes: short, since the probe is what a cold start waits on. */
const PROBE_INTERVAL_MS = 5;

/** A loopback port nothing listens on now, for a replica to take. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, LOOPBACK, () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export class CustomReplica implements Workload {
  readonly logs = new LogRing(LOG_RING_BYTES);
  #child: ChildProcess | undefined;
  #origin = "";
  #started: Promise<void> | undefined;
  #exited = false;
  #stopping = false;
  #exitStatus: { code: number | null; signal: NodeJS.Signals | null } = {
    code: null,
    signal: null,
  };
  readonly #exitListeners: Array<() => void> = [];
  #markGone: () => void = () => {};
  readonly #gone = new Promise<void>((resolve) => {
    this.#markGone = resolve;
  });

  constructor(
    readonly spec: CustomSpec,
    private readonly options: CustomReplicaOptions,
  ) {}

  /** `http://127.0.0.1:{port}` of the app's server, once started. */
  get origin(): string {
    return this.#origin;
  }

  get pid(): number | undefined {
    return this.#child?.pid;
  }

  get exited(): boolean {
    return this.#exited;
  }

  get accepting(): boolean {
    return !this.#exited && !this.#stopping;
  }

  onExit(listener: () => void): void {
    if (this.#exited) queueMicrotask(listener);
    else this.#exitListeners.push(listener);
  }

  start(): Promise<void> {
    this.#started ??= this.#start();
    return this.#started;
  }

  async #start(): Promise<void> {
    const custom = this.spec.config.custom;
    if (!custom) throw new WorkloadError({ kind: "load-failed", detail: "no [custom] table" });
    const port = await freePort();
    this.#origin = `http://${LOOPBACK}:${port}`;
    const [entry, ...entryArgs] = custom.entrypoint as [string, ...string[]];
    const { command, args, appDir, cleanup } = (this.options.sandbox ?? NO_SANDBOX).wrap(
      entry,
      entryArgs,
      this.spec.dir,
    );
    const child = spawn(command, args, {
      cwd: this.spec.dir,
      env: { ...managedEnv(this.spec, appDir), PORT: String(port) },
      stdio: ["ignore", "pipe", "pipe"],
      // Its own process group: stopping the replica stops whatever it spawned.
      detached: true,
    });
    child.once("exit", cleanup);
    child.once("error", cleanup);
    this.#child = child;
    child.stdout?.on("data", (data: Buffer) => this.logs.append("stdout", data));
    child.stderr?.on("data", (data: Buffer) => this.logs.append("stderr", data));
    const spawned = new Promise<void>((resolve, reject) => {
      child.once("spawn", resolve);
      child.once("error", (err) =>
        reject(
          new WorkloadError({
            kind: "load-failed",
            detail: `cannot start ${JSON.stringify(entry)}: ${(err as NodeJS.ErrnoException).code ?? err.message}`,
          }),
        ),
      );
    });
    child.on("exit", (code, signal) => this.#onExit(code, signal));
    await spawned;
    await this.#waitUntilHealthy(custom.healthcheck);
  }

  /** Probes the healthcheck until it answers 2xx; fails if the process ends or time runs out. */
  async #waitUntilHealthy(path: string): Promise<void> {
    const deadline = Date.now() + this.options.startTimeoutMs;
    for (;;) {
      if (this.#exited) {
        const { code, signal } = this.#exitStatus;
        const lastWords = this.logs.text().trim().split("\n").at(-1);
        throw new WorkloadError({
          kind: "load-failed",
          detail: `its process exited before it was healthy (${signal ? `signal ${signal}` : `code ${code}`})${lastWords ? `: ${lastWords}` : ""}`,
        });
      }
      try {
        const res = await fetch(`${this.#origin}${path}`, { signal: AbortSignal.timeout(1_000) });
        await res.arrayBuffer();
        if (res.ok) return;
      } catch {
        // Not listening yet.
      }
      if (Date.now() > deadline) {
        this.#kill("SIGKILL");
        throw new WorkloadError({
          kind: "load-failed",
          detail: `${path} did not answer 2xx within ${this.options.startTimeoutMs / 1000} s`,
        });
      }
      await new Promise((r) => setTimeout(r, PROBE_INTERVAL_MS));
    }
  }

  /** Custom apps are reached over HTTP at `origin`, not through calls. */
  invoke(): Promise<CallOutcome> {
    return Promise.reject(new Error("a custom-runtime replica is reached over HTTP"));
  }

  stop(): Promise<void> {
    if (!this.#child || this.#exited) {
      this.#stopping = true;
      return Promise.resolve();
    }
    if (!this.#stopping) {
      this.#stopping = true;
      this.#kill("SIGTERM");
      setTimeout(() => this.#kill("SIGKILL"), this.options.stopGraceMs).unref();
    }
    return this.#gone;
  }

  /** Marks the replica failed (a request on it broke): no more requests go to it. */
  fail(): void {
    this.#kill("SIGKILL");
    this.#stopping = true;
  }

  #onExit(code: number | null, signal: NodeJS.Signals | null): void {
    if (this.#exited) return;
    this.#exited = true;
    this.#exitStatus = { code, signal };
    this.#kill("SIGKILL"); // whatever it spawned, in its process group
    this.#markGone();
    for (const listener of this.#exitListeners.splice(0)) listener();
  }

  #kill(signal: NodeJS.Signals): void {
    const pid = this.#child?.pid;
    if (pid === undefined) return;
    try {
      process.kill(-pid, signal);
    } catch {
      // Already gone.
    }
  }
}
