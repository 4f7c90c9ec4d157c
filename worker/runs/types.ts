/**
 * The run store's own shapes: what a run is and what it needs. What crosses a component (the
 * host's runs, the runs index's reports, the caller's view) is in common/protocol/. Imports
 * nothing of the run store, so every module of it can import this one.
 */

/** What the shard needs of the run's app to queue and dispatch it (from the control plane). */
export interface AppLimits {
  /** Calls the app runs at once: `max_replicas × replica_concurrency`. */
  capacity: number;
  /** Seconds an accepted run may wait in the queue before it fails (`queue_timeout`). */
  queueTimeout: number;
  /** Calls one replica runs at once (placement counts the app's free slots on each host). */
  replicaConcurrency?: number;
}

export interface NewRun {
  runId: string;
  project: string;
  app: string;
  fn: string;
  createdAt: number;
  /** The deployed app's id (`ResolvedApp.id`): an async run runs on that app or not at all. */
  appId?: string;
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

/** What a delivery body says about the run (docs/api.md, "Webhook delivery"). */
export type Outcome =
  | {
      status: "success";
      result: unknown;
      /** A custom app's answer that is not text: `result` is its body in base64. */
      result_encoding?: "base64";
      /** A custom app's JSON answer, as its text: the delivery's `result`, byte for byte. */
      result_json?: string;
      run_time_ms: number | null;
      status_code?: number;
    }
  | {
      status: "failure";
      error: { message: string };
      run_time_ms: number | null;
      result?: unknown;
      result_encoding?: "base64";
      result_json?: string;
      status_code?: number;
    };

/**
 * An answer for the caller that is not the run (errors thrown across a Durable Object call
 * lose their class, so refusals travel as values).
 */
export interface Refusal {
  refused: {
    status: 400 | 404 | 409 | 413 | 422 | 429;
    message: string;
    /** The run it is about, when that is not the request's own (an Idempotency-Key's run). */
    runId?: string;
  };
}

/** A run call's `Idempotency-Key`, hashed with its scope, and the fingerprint of its request. */
export interface IdempotencyKey {
  /** SHA-256 of the project, app, function (or `METHOD /path`) and the key: picks the shard. */
  hash: string;
  /** SHA-256 of the method, path with query, and body. */
  fingerprint: string;
  /** How long the key is remembered. */
  ttlMs: number;
  /** How long a sync run holds it without an answer (SYNC_LEASE_MS unless the app starts slowly). */
  leaseMs?: number;
}

/** A sync run's answer as its key keeps it; `body` null: it was too large to keep. */
export interface KeptAnswer {
  status: number;
  headers: Record<string, string>;
  body: ArrayBuffer | null;
}

/** A key seen before: the same request again (its run, a sync run's answer), or a refusal. */
export type KeyClaim = { replayOf: string; answer?: KeptAnswer } | Refusal;

/**
 * A sync run's key whose answer is not kept: its run (`pending`), and whether its lease has
 * passed (the call that held it is over, by its own time limit, with no answer kept).
 */
export type PendingKey = { pending: string; lapsed: boolean };
