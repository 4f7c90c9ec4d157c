/**
 * A shard's table and what it reads of a row: the schema (applied by the store at start), the
 * row as a whole, the columns a view or a transition reads, and the narrower reads (the shard's
 * own facts, a run for the runs index, a queued run for the host). Types and SQL only.
 */
import type { RunStatus, WebhookState } from "../../common/protocol/runs.ts";
import type { DeliveryAttempt } from "../webhooks/deliver.ts";
import type { AppRequest } from "./types.ts";

export const SCHEMA = `
CREATE TABLE IF NOT EXISTS runs (
  id TEXT PRIMARY KEY,
  project TEXT NOT NULL,
  app TEXT NOT NULL,
  fn TEXT NOT NULL,
  async INTEGER NOT NULL,
  status TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  started_at INTEGER,
  finished_at INTEGER,
  deadline_at INTEGER,
  expires_at INTEGER,
  run_time_ms REAL,
  error TEXT,
  payload BLOB,
  request TEXT,
  host_misses INTEGER NOT NULL DEFAULT 0,
  hook_target TEXT,
  hook_signed INTEGER,
  hook_state TEXT,
  hook_attempts TEXT,
  hook_url TEXT,
  hook_secret TEXT,
  hook_body TEXT,
  due_at INTEGER,
  host_id TEXT,
  host_url TEXT,
  indexed INTEGER NOT NULL DEFAULT 1,
  hook_sealed BLOB,
  hook_history TEXT,
  status_code INTEGER,
  app_id TEXT
);
CREATE TABLE IF NOT EXISTS shard (
  key INTEGER PRIMARY KEY CHECK (key = 1),
  project TEXT NOT NULL,
  app TEXT NOT NULL,
  origin TEXT NOT NULL,
  capacity INTEGER NOT NULL
);
`;

/** The table's indexes: made once ADDED_COLUMNS are there (an index may name one of them). */
export const INDEXES = `
CREATE INDEX IF NOT EXISTS runs_queue ON runs (created_at, id) WHERE status = 'queued';
CREATE INDEX IF NOT EXISTS runs_due ON runs (due_at) WHERE due_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS runs_unindexed ON runs (id) WHERE indexed = 0;
`;

/**
 * Columns added since shards first made their table: added to an older table at start (a local
 * run store outlives a `git pull`, in RUNLET_HOME/wrangler; a deployed one outlives a deploy).
 */
export const ADDED_COLUMNS = {
  indexed: "INTEGER NOT NULL DEFAULT 1",
  host_id: "TEXT",
  host_url: "TEXT",
  hook_sealed: "BLOB",
  hook_history: "TEXT",
  status_code: "INTEGER",
  app_id: "TEXT",
} as const;

export interface RunRow extends Record<string, SqlStorageValue> {
  id: string;
  project: string;
  app: string;
  fn: string;
  async: number;
  status: RunStatus;
  created_at: number;
  started_at: number | null;
  finished_at: number | null;
  deadline_at: number | null;
  expires_at: number | null;
  run_time_ms: number | null;
  error: string | null;
  host_misses: number;
  hook_target: string | null;
  hook_signed: number | null;
  hook_state: WebhookState | null;
  hook_attempts: string | null;
  due_at: number | null;
  /** The host the run was handed to: its registry id (null: the configured one), its URL. */
  host_id: string | null;
  host_url: string | null;
  /** Earlier deliveries of the run (JSON `DeliverySeries[]`), once it was sent again. */
  hook_history: string | null;
  /** A custom app's run: the status of the app's answer. */
  status_code: number | null;
}

/** A delivery of a run that was sent again since: as the run's view shows it. */
export interface DeliverySeries {
  delivery: number;
  target: string;
  signed: boolean;
  state: WebhookState;
  attempts: DeliveryAttempt[];
}

/** What a move of a run writes: columns of the row, and `indexed` (never read with it). */
export type RowChanges = Partial<RunRow & { indexed: number }>;

/** The columns a view or a transition needs (never the payload, the secret or the body). */
export const COLUMNS = `id, project, app, fn, async, status, created_at, started_at, finished_at,
  deadline_at, expires_at, run_time_ms, error, host_misses, hook_target, hook_signed, hook_state,
  hook_attempts, due_at, host_id, host_url, hook_history, status_code`;

/** The shard's own facts: whose runs it holds, where the host reports, how much it may send. */
export interface ShardInfo extends Record<string, SqlStorageValue> {
  project: string;
  app: string;
  /** The Worker's origin, for the host's callback. */
  origin: string;
  capacity: number;
}

/** What the runs index is told of a run: its state and its delivery's. */
export type IndexRow = Pick<
  RunRow,
  | "id"
  | "project"
  | "app"
  | "fn"
  | "async"
  | "status"
  | "created_at"
  | "finished_at"
  | "run_time_ms"
  | "hook_state"
  | "hook_attempts"
  | "host_id"
  | "error"
  | "status_code"
>;

/** What a row keeps of a webhook: the shown target, whether it is signed, and the secrets. */
export interface HookColumns {
  target: string;
  signed: boolean;
  url: string;
  secret?: string;
}

/** What a queued run hands to the host. */
export interface QueuedRun {
  id: string;
  fn: string;
  payload: ArrayBuffer | null;
  request: AppRequest | null;
  /** The app it was accepted for (null: accepted before runs kept it). */
  app_id: string | null;
  /** 1 when it has a webhook, the one reader of its result. */
  hooked: number;
}
