/**
 * An async run as the host keeps it, what it does and how it is submitted. Types only, imported by the host's async
 * runs, its run reports and its routes alike; this module imports none of them. The same shape
 * answers a submission, `GET /internal/runs/{runId}` and the callback (its JSON).
 */

/**
 * `queued`: accepted, waiting for a replica slot (not started, never reported); `running`: on a
 * replica; then one of the ends.
 */
export type AsyncStatus = "queued" | "running" | "success" | "failure" | "cancelled";

export interface AsyncRun {
  runId: string;
  project: string;
  app: string;
  fn: string;
  status: AsyncStatus;
  /** When it started on a replica; unset while queued (and for a run that ended before). */
  startedAt?: number;
  /** When the run fails unless it has ended: its start + the app's response_grace_period. */
  deadlineAt?: number;
  finishedAt?: number;
  result?: unknown;
  /** A custom app's answer (its body as text, at most 10 MiB). */
  http?: HttpAnswer;
  error?: { message: string };
  runTimeMs?: number;
}

export interface HttpAnswer {
  status_code: number;
  content_type: string | null;
  body: string;
}

/** One request to a custom app, buffered: what its async run sends. */
export interface HttpCall {
  method: string;
  pathAndQuery: string;
  headers: Record<string, string>;
  body: Buffer;
}

/** What an async run does: call a function, or send a custom app one request. */
export type AsyncCall =
  | { runId: string; fn: string; payload: unknown }
  | { runId: string; http: HttpCall };

/** Who submitted a run, and how it waits for the answer. */
export interface Submitter {
  /** Where the run's end is reported unless the submission's answer carries it. */
  callbackUrl: string | undefined;
  /** How long, once the run has started, the answer waits for its end (ms). */
  waitMs: number;
  /** Aborts once the submitter's connection has closed. */
  gone: AbortSignal;
}

/** A submission's answer; a refused one throws a `WorkloadError` (busy, removed, closing). */
export type Submission =
  /** A run with this id is known already (any status): nothing was submitted. */
  | { kind: "exists"; run: AsyncRun }
  /** It started and is running past the submitter's wait: its end goes to the callback. */
  | { kind: "running"; run: AsyncRun }
  /** It ended (or was cancelled) before the answer: the answer carries its end. */
  | { kind: "ended"; run: AsyncRun }
  /** The submitter went away while the run was queued: it is gone, nothing to answer. */
  | { kind: "withdrawn" };
