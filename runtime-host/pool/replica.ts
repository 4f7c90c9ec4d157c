/** A managed replica: one child process running `shim.mjs`, spoken to over typed IPC. */
import type { ChildProcess } from "node:child_process";
import { LOG_RING_BYTES } from "../limits.ts";
import { type Launcher, launchManaged } from "../runtimes/managed/launch.ts";
import { LogRing } from "./log-ring.ts";
import { type ChildMessage, childMessageSchema, type InvokeMessage } from "./messages.ts";
import {
  type CallOutcome,
  type CallRequest,
  type Workload,
  WorkloadError,
  type WorkloadSpec,
} from "./workload.ts";

export interface ReplicaOptions {
  startTimeoutMs: number;
  stopGraceMs: number;
  /** How the process is started (tests and, later, the sandbox swap this). */
  launch?: Launcher;
}

interface PendingCall {
  resolve(outcome: CallOutcome): void;
  reject(error: WorkloadError): void;
  timer: NodeJS.Timeout;
}

const firstLine = (text: string) => text.split("\n", 1)[0]?.trim() || "unknown error";

function outcomeOf(msg: Extract<ChildMessage, { type: "result" }>): CallOutcome {
  if (msg.ok) return { kind: "returned", value: msg.value ?? null };
  if ("notFound" in msg) return { kind: "not-found" };
  return { kind: "threw", message: msg.error.message };
}

export class ManagedReplica implements Workload {
  readonly logs = new LogRing(LOG_RING_BYTES);
  #child: ChildProcess | undefined;
  #started: Promise<void> | undefined;
  #settleStart: ((error?: WorkloadError) => void) | undefined;
  #ready = false;
  #loadError: string | undefined;
  #stopping = false;
  /** Set when the host kills the process: it is as good as gone. */
  #killedWith: NodeJS.Signals | undefined;
  #stopTimer: NodeJS.Timeout | undefined;
  #exited = false;
  #exitStatus: { code: number | null; signal: NodeJS.Signals | null } = {
    code: null,
    signal: null,
  };
  readonly #exitListeners: Array<() => void> = [];
  readonly #gone: Promise<void>;
  #markGone: () => void = () => {};
  readonly #pending = new Map<string, PendingCall>();
  #nextId = 0;

  constructor(
    readonly spec: WorkloadSpec,
    private readonly options: ReplicaOptions,
  ) {
    this.#gone = new Promise((resolve) => {
      this.#markGone = resolve;
    });
  }

  get pid(): number | undefined {
    return this.#child?.pid;
  }

  get exited(): boolean {
    return this.#exited;
  }

  get accepting(): boolean {
    return !this.#exited && !this.#stopping && this.#killedWith === undefined;
  }

  onExit(listener: () => void): void {
    if (this.#exited) queueMicrotask(listener);
    else this.#exitListeners.push(listener);
  }

  start(): Promise<void> {
    this.#started ??= new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#settleStart?.(
          new WorkloadError({
            kind: "load-failed",
            detail: `it did not load within ${this.options.startTimeoutMs / 1000} s`,
          }),
        );
        this.#kill("SIGKILL");
      }, this.options.startTimeoutMs);
      this.#settleStart = (error) => {
        this.#settleStart = undefined;
        clearTimeout(timer);
        if (error) reject(error);
        else resolve();
      };
      this.#spawn();
    });
    return this.#started;
  }

  #spawn(): void {
    let child: ChildProcess;
    try {
      child = (this.options.launch ?? launchManaged)(this.spec);
    } catch {
      this.#onExit(null, null);
      return;
    }
    this.#child = child;
    child.stdout?.on("data", (data: Buffer) => this.logs.append("stdout", data));
    child.stderr?.on("data", (data: Buffer) => this.logs.append("stderr", data));
    child.on("message", (raw: unknown) => this.#onMessage(raw));
    // The app's code can close the channel; without it no result can come back, so end it.
    child.on("disconnect", () => this.#kill("SIGKILL"));
    child.on("exit", (code, signal) => this.#onExit(code, signal));
    child.on("error", () => {
      // Spawning failed (no pid, no exit event), or a signal could not be sent.
      if (child.pid === undefined) this.#onExit(null, null);
    });
  }

  #onMessage(raw: unknown): void {
    const parsed = childMessageSchema.safeParse(raw);
    if (!parsed.success) return;
    const msg = parsed.data;
    if (msg.type === "result") {
      const call = this.#pending.get(msg.id);
      if (!call) return;
      this.#pending.delete(msg.id);
      clearTimeout(call.timer);
      call.resolve(outcomeOf(msg));
    } else if (this.#ready) {
      // Start-up is over; a late `ready` or `load-error` can only come from the app's own code.
    } else if (msg.type === "ready") {
      this.#ready = true;
      this.#settleStart?.();
    } else {
      this.#loadError = firstLine(msg.message);
      this.#settleStart?.(new WorkloadError({ kind: "load-failed", detail: this.#loadError }));
      this.#kill("SIGKILL");
    }
  }

  #onExit(code: number | null, signal: NodeJS.Signals | null): void {
    if (this.#exited) return;
    this.#exited = true;
    this.#exitStatus = { code, signal };
    clearTimeout(this.#stopTimer);
    const failure = this.#stopping
      ? new WorkloadError({ kind: "closing" })
      : new WorkloadError({ kind: "exited", code, signal });
    this.#settleStart?.(
      this.#stopping
        ? failure
        : new WorkloadError({
            kind: "load-failed",
            detail:
              this.#loadError ??
              `its process exited during start-up (${signal ? `signal ${signal}` : `code ${code}`})`,
          }),
    );
    for (const [id, call] of this.#pending) {
      this.#pending.delete(id);
      clearTimeout(call.timer);
      call.reject(failure);
    }
    // Whatever the app spawned lives in the replica's process group: end it too.
    this.#signalGroup("SIGKILL");
    this.#markGone();
    for (const listener of this.#exitListeners.splice(0)) listener();
  }

  invoke(call: CallRequest, timeoutMs: number): Promise<CallOutcome> {
    const child = this.#child;
    if (this.#stopping) return Promise.reject(new WorkloadError({ kind: "closing" }));
    if (this.#exited || !child) {
      return Promise.reject(new WorkloadError({ kind: "exited", ...this.#exitStatus }));
    }
    if (this.#killedWith) {
      return Promise.reject(
        new WorkloadError({ kind: "exited", code: null, signal: this.#killedWith }),
      );
    }
    if (!this.#ready) return Promise.reject(new Error("invoke() before the replica is ready"));
    const id = String(++this.#nextId);
    return new Promise<CallOutcome>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pending.delete(id);
        reject(new WorkloadError({ kind: "timeout", ms: timeoutMs }));
        this.#kill("SIGKILL");
      }, timeoutMs);
      this.#pending.set(id, { resolve, reject, timer });
      const { fn, payload, runId, signal } = call;
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
    });
  }

  stop(): Promise<void> {
    if (!this.#child || this.#exited) {
      this.#stopping = true;
      return Promise.resolve();
    }
    if (!this.#stopping) {
      this.#stopping = true;
      this.#kill("SIGTERM");
      this.#stopTimer = setTimeout(() => this.#kill("SIGKILL"), this.options.stopGraceMs);
    }
    return this.#gone;
  }

  #kill(signal: NodeJS.Signals): void {
    if (this.#exited) return;
    if (signal === "SIGKILL") this.#killedWith = signal;
    if (!this.#signalGroup(signal)) {
      try {
        this.#child?.kill(signal);
      } catch {
        // Already gone: its exit event follows.
      }
    }
  }

  /** Signals the replica's process group; false if there is none (any more). */
  #signalGroup(signal: NodeJS.Signals): boolean {
    const pid = this.#child?.pid;
    if (pid === undefined) return false;
    try {
      process.kill(-pid, signal);
      return true;
    } catch {
      return false;
    }
  }
}

/** The `WorkloadFactory` of managed replicas. */
export function managedReplicaFactory(options: ReplicaOptions) {
  return (spec: WorkloadSpec): Workload => new ManagedReplica(spec, options);
}
