/**
 * The seam between the pool and what runs an app. A `Workload` is one replica of one version of
 * an app, started inside the host's sandbox, of one of two kinds that say what it can do:
 * a `FunctionWorkload` (managed runtime: `ManagedReplica`, the shim spoken to over IPC) runs
 * calls of an export; an `HttpWorkload` (custom runtime: `CustomReplica`) is the app's own HTTP
 * server, reached at an address. Code that needs one kind narrows by `kind`; nothing casts.
 */
import { cp } from "node:fs/promises";
import { exitOf } from "../../common/exit-status.ts";
import type { LogRing } from "./log-ring.ts";
import type { ExitStatus } from "./replica-process.ts";

/** What a replica runs: one deployed version of an app, in its folder. */
export interface WorkloadSpec {
  project: string;
  app: string;
  version: number;
  /** The version's folder: the app's files, the child's cwd and HOME. */
  dir: string;
  /** Extra environment of the app. */
  env?: Record<string, string>;
  /**
   * Its project's secrets, read as the replica starts (in a registry), added to `env`; with the
   * project's secrets revision they are (absent: an older control plane).
   */
  secrets?: () => Promise<ReadSecrets>;
  /**
   * The app's `start_timeout` (seconds): the longest its replica may take to be ready. Without
   * it (a spare, a config without the field), the host's `startTimeoutMs`.
   */
  startTimeout?: number;
}

/**
 * The longest a replica may take to start (ms): its app's `startTimeout` (seconds), else the
 * host's limit.
 */
export const startLimitMs = (startTimeout: number | undefined, hostLimitMs: number): number =>
  startTimeout === undefined ? hostLimitMs : startTimeout * 1000;

/** A start limit as an error says it: `30 s, the app's start_timeout (runlet.toml)`. */
export const startLimitWords = (limitMs: number): string =>
  `${limitMs / 1000} s, the app's start_timeout (runlet.toml)`;

/**
 * Copies a version's files into a replica's own folder (`failed` runs if that fails). Its error
 * names no path of the host (the caller reads it): a version folder gone meanwhile said
 * "ENOENT: no such file or directory, lstat '/home/…/host/apps/…/v7'".
 */
export async function copyVersion(from: string, to: string, failed?: () => void): Promise<void> {
  try {
    await cp(from, to, { recursive: true });
  } catch (err) {
    failed?.();
    const code = (err as NodeJS.ErrnoException).code ?? "error";
    throw hostFailure(
      code === "ENOENT"
        ? "its version's files are gone from this host (the app was deleted or redeployed meanwhile)"
        : `its version's files could not be copied for it (${code})`,
    );
  }
}

/** A project's secrets as a replica reads them: its environment, and their revision. */
export interface ReadSecrets {
  env: Record<string, string>;
  revision?: number;
}

/** The project's secrets for a replica of `spec` (none outside a registry). */
export async function readSecrets(spec: WorkloadSpec): Promise<ReadSecrets> {
  try {
    return (await spec.secrets?.()) ?? { env: {} };
  } catch (err) {
    throw hostFailure(`cannot read the project's secrets: ${(err as Error).message}`);
  }
}

/** A replica that could not start for a reason of the app's: its module, its server. */
export const appFailure = (detail: string) => new WorkloadError({ kind: "load-failed", detail });

/**
 * A replica that could not start for a reason of the host's own, not of the app's code: its
 * sandbox, the project's secrets, the version's files. A deploy's trial says so (trials.ts),
 * and the control plane asks another host rather than blame the app.
 */
export const hostFailure = (detail: string) =>
  new WorkloadError({ kind: "load-failed", detail, host: true });

/** Whether `err` is the host's own failure to start a replica (`hostFailure`). */
export const isHostFailure = (err: unknown): boolean =>
  err instanceof WorkloadError && err.failure.kind === "load-failed" && err.failure.host === true;

/**
 * Rethrows a spare's failure to start (its process or sandbox, before any app's code ran) as
 * the host's own; any other error as it is.
 */
export function asHostFailure(err: unknown): never {
  const failure = err instanceof WorkloadError ? err.failure : undefined;
  if (failure?.kind === "load-failed" && !failure.host) throw hostFailure(failure.detail);
  throw err;
}

/** Gives the files copied into a replica's folder to its sandbox's user (`Wrapped.adopt`). */
export async function adoptFiles(adopt: () => Promise<void>): Promise<void> {
  try {
    await adopt();
  } catch (err) {
    throw hostFailure(
      `its files could not be given to its sandbox's user (${(err as Error).message})`,
    );
  }
}

/** One synchronous call of an export. */
export interface CallRequest {
  fn: string;
  payload: unknown;
  runId: string;
  /** An async run (the function sees `ctx.async`); sync calls leave it out. */
  async?: boolean;
  /** Aborting it cancels the call: the function's `ctx.signal` aborts. */
  signal?: AbortSignal;
}

/** How a call ended inside the app (as opposed to a `WorkloadError`: the replica failed). */
export type CallOutcome =
  | { kind: "returned"; value: unknown }
  | { kind: "threw"; message: string }
  | { kind: "not-found" /** The names of the functions the app does export. */; exports: string[] };

export type WorkloadFailure =
  /** `host`: the host's own failure (`hostFailure`), not the app's. */
  | { kind: "load-failed"; detail: string; host?: true }
  | {
      kind: "exited";
      /** The app: its replica's output (`runlet logs --app`) may say why it exited. */
      app: string;
      code: number | null;
      signal: NodeJS.Signals | null;
      /** The host stopped it because another call on it outlived its time limit (seconds). */
      stoppedFor?: number;
      /** It wrote V8's out-of-memory report before it ended. */
      outOfMemory?: true;
    }
  | { kind: "timeout"; ms: number }
  | {
      kind: "busy";
      max_replicas: number;
      replica_concurrency: number;
      detail: string;
      /** No replica here and none may start (its replicas run on other hosts): try another. */
      elsewhere?: true;
      /** None may start because the control plane could not be asked for a grant: why. */
      unasked?: string;
    }
  | { kind: "removed" }
  /** `elsewhere`: it waited for a slot and never started, so another host may take it. */
  | { kind: "closing"; elsewhere?: true; running?: true }
  /** Its caller gave up (its signal aborted) while it still waited for a slot. */
  | { kind: "withdrawn" };

function describe(failure: WorkloadFailure): string {
  switch (failure.kind) {
    case "load-failed":
      return failure.host
        ? `the runtime host could not start a replica of the app: ${failure.detail}`
        : `the app failed to start: ${failure.detail}`;
    case "exited":
      if (failure.stoppedFor !== undefined)
        return `the function's process was stopped: another call on the same replica ran past its ${failure.stoppedFor} s limit`;
      if (failure.outOfMemory)
        return `the function ran out of memory: its process reached the JavaScript heap's limit and ended (${exitOf(failure)}); see "Limits" in docs/api.md`;
      return `the function's process exited unexpectedly (${exitOf(failure)}); its output (runlet logs --app ${failure.app}) may say why`;
    case "timeout":
      return `the function did not finish within ${failure.ms / 1000} s; its process was stopped`;
    case "busy":
      if (failure.unasked !== undefined)
        return `no replica of the app could be started here: the control plane, which grants replicas over all hosts, could not be asked (${failure.unasked}); try again shortly`;
      return `the app is at capacity (${failure.max_replicas} ${failure.max_replicas === 1 ? "replica" : "replicas"} × ${failure.replica_concurrency} concurrent ${failure.replica_concurrency === 1 ? "call" : "calls"}, all busy) ${failure.detail}: try again shortly, or raise [scaling] max_replicas`;
    case "removed":
      return "the app was deleted";
    case "closing":
      if (failure.running)
        return "the runtime host stopped while the call ran there, and its process with it: the call may not have finished";
      return failure.elsewhere
        ? "the runtime host is stopping: the call had not started there"
        : "the runtime host is shutting down";
    case "withdrawn":
      return "the call was withdrawn while it waited for a replica slot";
  }
}

/** A replica could not run a call; the message is safe to show a caller. */
export class WorkloadError extends Error {
  /**
   * How long the call ran on its replica before this failure (its process died, or it ran past
   * its limit): the runs index shows it, as it does for a call that ended.
   */
  runTimeMs: number | undefined;

  constructor(readonly failure: WorkloadFailure) {
    super(describe(failure));
    this.name = "WorkloadError";
  }
}

/** What every replica is: a process with a lifecycle and logs. */
export interface Replica {
  readonly spec: WorkloadSpec;
  /** The process id once started (for stopping and for tests). */
  readonly pid: number | undefined;
  /** True once the replica's process has ended. */
  readonly exited: boolean;
  /** How its process ended: its exit code or signal, once `exited`. */
  readonly exitStatus: ExitStatus | undefined;
  /** False once the replica is ending (stopped, killed or exited): it takes no more calls. */
  readonly accepting: boolean;
  /**
   * The project's secrets revision its environment was made with, once it read them (undefined
   * before, outside a registry, or from an older control plane): the pool replaces a replica of
   * an earlier revision than the latest it heard of.
   */
  readonly secretsRevision: number | undefined;
  /** The replica's stdout and stderr. */
  readonly logs: LogRing;
  /** Starts the replica; resolves once the app's module is loaded, else a `load-failed` error. */
  start(): Promise<void>;
  /** SIGTERM, then SIGKILL after the grace period; resolves once the process is gone. */
  stop(): Promise<void>;
  /** Called once, when the replica's process has ended (for whatever reason). */
  onExit(listener: () => void): void;
}

/** A managed-runtime replica: it runs calls of the app's exports. */
export interface FunctionWorkload extends Replica {
  readonly kind: "function";
  /** The names of the functions its module exports, once it has started (a call names one). */
  readonly exports: readonly string[] | undefined;
  /** Runs one call; a failure of the replica (not of the app's code) rejects with `WorkloadError`. */
  invoke(call: CallRequest, timeoutMs: number): Promise<CallOutcome>;
}

/** A custom-runtime replica: the app's own HTTP server. */
export interface HttpWorkload extends Replica {
  readonly kind: "http";
  /** Scheme, host and port of requests to the app (through `socketPath` when it is set). */
  readonly origin: string;
  /** The Unix socket that reaches the app inside its sandbox, if it has one of its own. */
  readonly socketPath: string | undefined;
  /**
   * A request on it broke before any answer (refused, reset): it takes no more requests unless
   * its server still answers its healthcheck; resolves whether it does, and how its process
   * ended if it exited by itself.
   */
  broke(): Promise<Broken>;
}

/** What `HttpWorkload.broke` found: its server still serves, or not, its process exited or not. */
export type Broken = { serves: true } | { serves: false; exited?: ExitStatus };

export type Workload = FunctionWorkload | HttpWorkload;

/** The replica of a managed app; a custom app's here is Runlet's own error (a 500). */
export function functionWorkload(workload: Workload): FunctionWorkload {
  if (workload.kind === "function") return workload;
  throw new Error("a custom app's replica was given a function call");
}

/** The replica of a custom app; a managed app's here is Runlet's own error (a 500). */
export function httpWorkload(workload: Workload): HttpWorkload {
  if (workload.kind === "http") return workload;
  throw new Error("a managed app's replica was given an HTTP request");
}
