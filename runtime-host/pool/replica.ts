/**
 * A managed replica: one child process running `shim.mjs`, spoken to over typed IPC.
 * Over 300 lines: one process's whole life (start, IPC, calls, output, exit) around its private
 * state.
 */

import type { ChildProcess } from "node:child_process";
import { MAX_START_TIMEOUT_S } from "../../common/app-limits.ts";
import { exitOf } from "../../common/exit-status.ts";
import { LOG_RING_BYTES } from "../limits.ts";
import { type Launcher, launchManaged, loadEnv } from "../runtimes/managed/launch.ts";
import { LogRing } from "./log-ring.ts";
import { type InvokeMessage, type LoadMessage, outcomeOf, readChildMessage } from "./messages.ts";
import { PendingCalls } from "./pending-calls.ts";
import { type ExitStatus, ReplicaProcess } from "./replica-process.ts";
import { hostRunLogs, type RunLogStore } from "./run-logs.ts";
import { RunOutput } from "./run-output.ts";
import {
  adoptFiles,
  appFailure,
  asHostFailure,
  type CallOutcome,
  type CallRequest,
  copyVersion,
  type FunctionWorkload,
  hostFailure,
  readSecrets,
  startLimitMs,
  startLimitWords,
  WorkloadError,
  type WorkloadSpec,
} from "./workload.ts";

export interface ReplicaOptions {
  /** The start limit of a spare, and of an app whose spec has no `startTimeout`. */
  startTimeoutMs: number;
  stopGraceMs: number;
  /** How the process is started (the host's sandboxed launcher; plain processes by default). */
  launch?: Launcher;
  /** Where the logs of the replica's runs go; the host's store unless given. */
  runLogs?: RunLogStore;
}

/** How long after its exit a process's last output may still be arriving. */
const LAST_OUTPUT_MS = 1_000;
/**
 * How long a process whose IPC channel closed may take to exit by itself before it is killed: a
 * crashing process closes it as it dies, and its own exit status says more than our SIGKILL.
 */
const EXIT_AFTER_DISCONNECT_MS = 1_000;

const firstLine = (text: string) => text.split("\n", 1)[0]?.trim() || "unknown error";

export class ManagedReplica implements FunctionWorkload {
  readonly kind = "function";
  readonly logs = new LogRing(LOG_RING_BYTES);
  #runOutputOf: RunOutput | undefined;
  readonly #process = new ReplicaProcess(() => this.#ended());
  #started: Promise<void> | undefined;
  #settleStart: ((error?: WorkloadError) => void) | undefined;
  /** Once it is ready: the functions its module exports. */
  #exports: readonly string[] | undefined;
  /** Why its start failed, once known: its module's error, or the host's (its sandbox). */
  #loadFailure: WorkloadError | undefined;
  /** Set when the host kills the process: it is as good as gone. */
  #killedWith: NodeJS.Signals | undefined;
  /** Its channel closed: no result can come back, and its exit (or our kill) follows. */
  #disconnected = false;
  /** A call ran past its limit of this many seconds: only a kill stops it (its others with it). */
  #stoppedFor: number | undefined;
  readonly #pending = new PendingCalls();

  #spec: WorkloadSpec;
  #spareStarted: Promise<void> | undefined;
  #secretsRevision: number | undefined;
  /** Gives the app's files copied into its folder to the replica's sandbox user. */
  #adopt: () => Promise<void> = async () => {};

  constructor(
    spec: WorkloadSpec,
    private readonly options: ReplicaOptions,
  ) {
    this.#spec = spec;
  }

  get spec(): WorkloadSpec {
    return this.#spec;
  }

  /** Sorts the process's output between its runs' logs and `logs`. */
  get #runOutput(): RunOutput {
    this.#runOutputOf ??= new RunOutput(this.options.runLogs ?? hostRunLogs, this.logs);
    return this.#runOutputOf;
  }

  get secretsRevision(): number | undefined {
    return this.#secretsRevision;
  }

  get exports(): readonly string[] | undefined {
    return this.#exports;
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
    return !this.#process.exited && !this.#doomed && !this.#process.stopping;
  }

  /** Killed, or its channel closed: it takes no more calls. */
  get #doomed(): boolean {
    return this.#killedWith !== undefined || this.#disconnected;
  }

  onExit(listener: () => void): void {
    this.#process.onExit(listener);
  }

  start(): Promise<void> {
    this.#started ??= this.#startup(() => this.#spawn());
    return this.#started;
  }

  /**
   * A spare (its spec's env holds RUNLET_SPARE=1): starts node and the shim before any app is
   * known; resolves once the process waits for one.
   */
  startSpare(): Promise<void> {
    this.#spareStarted ??= this.#startup(() => this.#spawn(), "spare");
    return this.#spareStarted;
  }

  /**
   * Makes a spare the replica of `spec`: `start()` then copies the version's files into the
   * spare's own folder (the app writes there, never into the deployed version) and loads them.
   */
  assign(spec: WorkloadSpec): this {
    // With the spare's own spec, before it becomes the app's; its failing start (node and the
    // shim, no app's code yet) is the host's.
    const spare = this.startSpare().catch(asHostFailure);
    const slot = this.#spec.dir;
    this.#spec = { ...spec, dir: slot };
    this.#started = spare.then(() =>
      this.#startup(async () => {
        const secrets = await readSecrets(spec);
        this.#secretsRevision = secrets.revision;
        await copyVersion(spec.dir, slot);
        await adoptFiles(this.#adopt);
        const env = loadEnv(spec, secrets.env);
        this.#process.child?.send({ type: "load", env } satisfies LoadMessage, (err) => {
          if (err) this.#kill("SIGKILL");
        });
      }),
    );
    return this;
  }

  /**
   * Runs `begin`, then waits for the process's `spare` or `ready` (or its failure). A spare's
   * start (node and the shim, no app's code) is bounded by the host's limit, and is the host's.
   */
  #startup(begin: () => void | Promise<void>, spare?: "spare"): Promise<void> {
    const limitMs = startLimitMs(this.#spec.startTimeout, this.options.startTimeoutMs);
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#settleStart?.(
          spare
            ? hostFailure(
                `a spare process (node and the runtime's shim, no app's code yet) did not start within ${limitMs / 1000} s, the host's start limit: the machine is overloaded, or its sandbox is broken (the host's log may say)`,
              )
            : // A model loaded as main.mjs is imported: it said the limit alone, not the way out.
              appFailure(
                `it did not load within ${startLimitWords(limitMs)}: a module that loads a model or data as it is imported must load within it: raise start_timeout (at most ${MAX_START_TIMEOUT_S} s), or load it on the first call instead, kept in a module-level promise (docs/api.md, "Slow starts")`,
              ),
        );
        this.#kill("SIGKILL");
      }, limitMs);
      this.#settleStart = (error) => {
        this.#settleStart = undefined;
        clearTimeout(timer);
        if (error) reject(error);
        else resolve();
      };
      const failed = (err: unknown) => {
        this.#settleStart?.(
          err instanceof WorkloadError ? err : appFailure((err as Error).message),
        );
        this.#kill("SIGKILL");
      };
      // At once, not in a later tick: a spare must spawn with its own spec, before `assign`.
      try {
        begin()?.catch(failed);
      } catch (err) {
        failed(err);
      }
    });
  }

  /** Starts the process; its spec is taken now (a spare's, before `assign` changes it). */
  async #spawn(): Promise<void> {
    const spec = this.#spec;
    let child: ChildProcess;
    let sandboxed: readonly string[] | undefined;
    try {
      const launched = await (this.options.launch ?? launchManaged)(spec);
      child = launched.child;
      sandboxed = launched.ownProcesses;
      this.#adopt = launched.adopt;
    } catch (err) {
      this.#loadFailure = hostFailure(`cannot start its sandbox: ${(err as Error).message}`);
      this.#process.exitedWith(null, null);
      return;
    }
    this.#process.attach(child, sandboxed);
    child.stdout?.on("data", (data: Buffer) => this.#runOutput.own("stdout", data));
    child.stderr?.on("data", (data: Buffer) => this.#runOutput.own("stderr", data));
    // Every output of the process is read: the runs it left unfinished get its last words.
    child.on("close", () => this.#lastWords());
    child.on("message", (raw: unknown) => this.#onMessage(raw));
    // The app's code can close the channel; without it no result can come back, so end it.
    child.on("disconnect", () => {
      this.#disconnected = true;
      setTimeout(() => this.#kill("SIGKILL"), EXIT_AFTER_DISCONNECT_MS).unref();
    });
    child.on("error", () => {
      // Spawning failed (no pid, no exit event), or a signal could not be sent.
      if (child.pid === undefined) this.#process.exitedWith(null, null);
    });
  }

  #onMessage(raw: unknown): void {
    const msg = readChildMessage(raw);
    if (!msg) return;
    if (msg.type === "log") {
      this.#runOutput.log(msg);
    } else if (msg.type === "result") {
      this.#runOutput.end(msg.id);
      this.#pending.settle(msg.id, outcomeOf(msg));
    } else if (this.#exports) {
      // Start-up is over; a late `ready` or `load-error` can only come from the app's own code.
    } else if (msg.type === "spare") {
      this.#settleStart?.();
    } else if (msg.type === "ready") {
      this.#exports = msg.exports;
      this.#settleStart?.();
    } else {
      this.#loadFailure = appFailure(firstLine(msg.message));
      this.#settleStart?.(this.#loadFailure);
      this.#kill("SIGKILL");
    }
  }

  /** The process has exited: its start and its calls in flight fail. */
  #ended(): void {
    const { code, signal } = this.#process.status;
    const stopping = this.#process.stopping;
    const outOfMemory = this.#runOutput.outOfMemory || undefined;
    const failure = stopping
      ? new WorkloadError({ kind: "closing", running: true })
      : new WorkloadError({
          kind: "exited",
          app: this.spec.app,
          code,
          signal,
          stoppedFor: this.#stoppedFor,
          outOfMemory,
        });
    this.#settleStart?.(
      stopping
        ? new WorkloadError({ kind: "closing" })
        : (this.#loadFailure ??
            appFailure(`its process exited during start-up (${exitOf({ code, signal })})`)),
    );
    this.#pending.failAll(failure);
    // A grandchild outside the group may hold the process's stdout open: `close` may never come.
    setTimeout(() => this.#lastWords(), LAST_OUTPUT_MS).unref();
  }

  invoke(call: CallRequest, timeoutMs: number): Promise<CallOutcome> {
    const child = this.#process.child;
    if (this.#process.stopping) return Promise.reject(new WorkloadError({ kind: "closing" }));
    if (this.#process.exited || !child || this.#doomed) {
      const status = this.#process.exitStatus ?? { code: null, signal: this.#killedWith ?? null };
      return Promise.reject(new WorkloadError({ kind: "exited", app: this.spec.app, ...status }));
    }
    if (!this.#exports) return Promise.reject(new Error("invoke() before the replica is ready"));
    const { id, outcome } = this.#pending.open(timeoutMs, () => this.#kill("SIGKILL", timeoutMs));
    const { fn, payload, runId, signal } = call;
    this.#runOutput.begin(id, runId, { project: this.spec.project, app: this.spec.app });
    const msg: InvokeMessage = { type: "invoke", id, fn, payload, runId, async: !!call.async };
    // A failed send means the channel is gone: the process ends and its exit rejects the call.
    try {
      child.send(msg, (err) => {
        if (err) this.#kill("SIGKILL");
      });
    } catch {
      this.#kill("SIGKILL");
    }
    // A cancelled call is told to the function (its ctx.signal; IPC keeps the order, so this
    // follows the invoke). Its slot stays taken until it returns: it may still be working.
    const cancel = () => {
      try {
        child.send({ type: "cancel", id }, () => {});
      } catch {
        // The channel is gone: the process ends, and its exit settles the call.
      }
    };
    if (signal?.aborted) cancel();
    else signal?.addEventListener("abort", cancel, { once: true });
    return outcome;
  }

  /** Once the process has ended: the runs still in flight keep its last output and its end. */
  #lastWords(): void {
    const { status, stopping } = this.#process;
    this.#runOutput.processEnded({ status, stopping, stoppedFor: this.#stoppedFor });
  }

  stop(): Promise<void> {
    return this.#process.stop(this.options.stopGraceMs);
  }

  #kill(signal: NodeJS.Signals, pastLimitMs?: number): void {
    if (this.#process.exited) return;
    if (pastLimitMs !== undefined) this.#stoppedFor ??= pastLimitMs / 1000;
    if (signal === "SIGKILL") this.#killedWith = signal;
    this.#process.signal(signal);
  }
}
