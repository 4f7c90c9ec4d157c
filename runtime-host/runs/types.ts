/**
 * An async run as the host keeps it, what it does and how it is submitted. Types only, imported
 * by the host's async runs, its run reports and its routes alike; this module imports none of
 * them. The run itself is the protocol's `HostRun`: it answers a submission, `GET
 * /internal/runs/{runId}` and is the callback's body.
 */
import type { HostRun } from "../../common/protocol/host.ts";

/** One request to a custom app, buffered: what its async run sends. */
export interface HttpCall {
  method: string;
  pathAndQuery: string;
  headers: Record<string, string>;
  body: Buffer;
}

/**
 * What an async run does: call a function, or send a custom app one request. `noResult`: the run
 * has no webhook, so nobody reads its result; none is kept, whatever its size.
 */
export type AsyncCall = { runId: string; noResult?: boolean } & (
  | { fn: string; payload: unknown }
  | { http: HttpCall }
);

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
  | { kind: "exists"; run: HostRun }
  /** It started and is running past the submitter's wait: its end goes to the callback. */
  | { kind: "running"; run: HostRun }
  /** It ended (or was cancelled) before the answer: the answer carries its end. */
  | { kind: "ended"; run: HostRun }
  /** The submitter went away while the run was queued: it is gone, nothing to answer. */
  | { kind: "withdrawn" };
