/**
 * The run store's shared shapes: what a run is, what the runtime host says of one, what a caller
 * sees. Imports nothing of the run store, so every module of it can import this one.
 */
import type { DeliveryAttempt } from "../webhooks/deliver.ts";

export type RunStatus = "queued" | "running" | "success" | "failure" | "cancelled";

export const ENDED: readonly RunStatus[] = ["success", "failure", "cancelled"];

/** What the shard needs of the run's app to queue and dispatch it (from the control plane). */
export interface AppLimits {
  /** Calls the app runs at once: `max_replicas × replica_concurrency`. */
  capacity: number;
  /** Seconds an accepted run may wait in the queue before it fails (`queue_timeout`). */
  queueTimeout: number;
}

export interface NewRun {
  runId: string;
  project: string;
  app: string;
  fn: string;
  createdAt: number;
}

/** Where the response goes, and the secret that signs it (kept until the delivery ends). */
export interface WebhookRequest {
  url: string;
  secret?: string;
}

/** A custom app's request, for its async runs: sent to the app as it came. */
export interface AppRequest {
  method: string;
  /** The path after the app, and the query less Runlet's own parameters. */
  pathAndQuery: string;
  headers: Record<string, string>;
}

/** How the runtime host describes an async run (its answers, its callback, its state). */
export interface HostRun {
  status: "queued" | RunStatus;
  startedAt?: number;
  finishedAt?: number;
  deadlineAt?: number;
  result?: unknown;
  /** A custom app's answer, for its async runs. */
  http?: { status_code: number; content_type: string | null; body: string };
  error?: { message: string };
  runTimeMs?: number;
}

/** What a delivery body says about the run (DESIGN.md §4, "Webhook delivery"). */
export type Outcome =
  | { status: "success"; result: unknown; run_time_ms: number | null; status_code?: number }
  | {
      status: "failure";
      error: { message: string };
      run_time_ms: number | null;
      result?: unknown;
      status_code?: number;
    };

export interface WebhookView {
  /** Scheme, host and path of the target (its query may hold credentials: not shown). */
  target: string;
  signed: boolean;
  state: "pending" | "delivered" | "failed";
  attempts: Array<Omit<DeliveryAttempt, "at"> & { at: string }>;
}

/** What `GET /v4/{project}/{app}/runs/{run_id}` shows: never the secret or the result. */
export interface RunView {
  run_id: string;
  project: string;
  app: string;
  function: string;
  async: boolean;
  status: RunStatus;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  run_time_ms: number | null;
  error?: { message: string };
  webhook?: WebhookView;
}

/**
 * An answer for the caller that is not the run (errors thrown across a Durable Object call
 * lose their class, so refusals travel as values).
 */
export interface Refusal {
  refused: { status: 400 | 404 | 409 | 429; message: string };
}
