/**
 * Idempotency keys, kept in the shard their hash picks, beside the runs they name (docs/api.md,
 * "Idempotency-Key"). A key remembers the request it came with (its fingerprint) and its run;
 * for a sync run, also the answer once the run ended (its body among its run's parts, parts.ts:
 * a Durable Object's SQLite value holds at most 2 MB). A sync run's key is leased while its call is open: should the Worker die
 * before the answer is kept, the key is free again once the lease passed.
 */
import type { RunParts } from "./parts.ts";
import { refusal } from "./refusal.ts";
import type { IdempotencyKey, KeptAnswer, KeyClaim, PendingKey } from "./types.ts";

const SCHEMA = `
CREATE TABLE IF NOT EXISTS idempotency_keys (
  key_hash TEXT PRIMARY KEY,
  fingerprint TEXT NOT NULL,
  run_id TEXT NOT NULL,
  async INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  lease_until INTEGER,
  answer_status INTEGER,
  answer_headers TEXT,
  answer_kept INTEGER
);
CREATE INDEX IF NOT EXISTS idempotency_keys_expiry ON idempotency_keys (expires_at);
`;

/**
 * How long a sync run's key stays leased without its answer: longer than a sync call can last
 * (the host's 5-minute limit on a call and its 30 s wait for a slot, runtime-host/limits.ts),
 * unless the app's `start_timeout` makes it longer (the key's `leaseMs`). A Worker stopped
 * mid-call, or a caller gone whose request was cancelled, frees it after that.
 */
export const SYNC_LEASE_MS = 10 * 60_000;

interface KeyRow extends Record<string, SqlStorageValue> {
  fingerprint: string;
  run_id: string;
  async: number;
  lease_until: number | null;
  answer_status: number | null;
  answer_headers: string | null;
  /** 1: the answer's body is kept; 0: it was not (too large, or cut off). */
  answer_kept: number | null;
}

export class IdempotencyKeys {
  /** The soonest expiry of a key (read once, then kept): the alarm asks on every move of a run. */
  #soonest: number | undefined;

  constructor(
    private readonly sql: SqlStorage,
    /** The shard's parts, where a kept answer's body is its run's `answer`. */
    private readonly parts: RunParts,
  ) {
    dropFirstKeys(sql);
    sql.exec(SCHEMA);
    this.#soonest = this.#readSoonest();
  }

  /**
   * What `key` says of a new request: nothing (`undefined`: new), the same request again (its
   * run, and a sync run's answer), a request that differs (422), or a sync run whose answer is
   * not kept (`pending`: not answered yet, or lost with a Worker that stopped mid-call).
   */
  seen(key: IdempotencyKey, now: number): KeyClaim | PendingKey | undefined {
    const row = this.sql
      .exec<KeyRow>(
        `SELECT fingerprint, run_id, async, lease_until, answer_status, answer_headers, answer_kept
         FROM idempotency_keys WHERE key_hash = ? AND expires_at > ?`,
        key.hash,
        now,
      )
      .toArray()[0];
    if (!row) return undefined;
    if (row.fingerprint !== key.fingerprint) return refusal(422, KEY_REUSED, row.run_id);
    if (row.async === 1) return { replayOf: row.run_id };
    if (row.answer_kept === 0) return refusal(409, tooLarge(row.run_id), row.run_id);
    if (row.answer_status !== null) return { replayOf: row.run_id, answer: this.#answer(row) };
    return { pending: row.run_id, lapsed: row.lease_until === null || row.lease_until <= now };
  }

  /** `key` now names `runId` (after `seen` found nothing). */
  take(key: IdempotencyKey, runId: string, isAsync: boolean, now: number): void {
    this.#forget(key.hash);
    this.sql.exec(
      `INSERT INTO idempotency_keys (key_hash, fingerprint, run_id, async, expires_at, lease_until)
       VALUES (?, ?, ?, ?, ?, ?)`,
      key.hash,
      key.fingerprint,
      runId,
      Number(isAsync),
      now + key.ttlMs,
      isAsync ? null : now + (key.leaseMs ?? SYNC_LEASE_MS),
    );
    this.#soonest = Math.min(this.#soonest ?? Number.POSITIVE_INFINITY, now + key.ttlMs);
  }

  /** A sync run's answer, kept for the replays of its key (a body of null was too large). */
  keep(keyHash: string, runId: string, answer: KeptAnswer): void {
    const { body } = answer;
    const taken = this.sql.exec(
      `UPDATE idempotency_keys SET lease_until = NULL, answer_status = ?, answer_headers = ?,
           answer_kept = ? WHERE key_hash = ? AND run_id = ?`,
      answer.status,
      JSON.stringify(answer.headers),
      Number(body !== null),
      keyHash,
      runId,
    ).rowsWritten;
    // Not taken: the key expired, or was taken again, meanwhile.
    if (taken > 0 && body) this.parts.put(runId, "answer", new Uint8Array(body));
  }

  /** The call ended with no answer of its run (the host was not reached): the key is free. */
  release(keyHash: string, runId: string): void {
    this.sql.exec(
      "DELETE FROM idempotency_keys WHERE key_hash = ? AND run_id = ? AND answer_status IS NULL",
      keyHash,
      runId,
    );
  }

  /** Keys past their time, removed with their answers (from the shard's alarm). */
  removeExpired(now: number, limit: number): void {
    if (this.#soonest === undefined || this.#soonest > now) return;
    const gone = this.sql
      .exec<{ key_hash: string }>(
        "SELECT key_hash FROM idempotency_keys WHERE expires_at <= ? LIMIT ?",
        now,
        limit,
      )
      .toArray();
    for (const { key_hash } of gone) this.#forget(key_hash);
    this.#soonest = this.#readSoonest();
  }

  /** When the soonest key expires. */
  nextExpiry(): number | undefined {
    return this.#soonest;
  }

  #readSoonest(): number | undefined {
    const { at } = this.sql
      .exec<{ at: number | null }>("SELECT min(expires_at) AS at FROM idempotency_keys")
      .one();
    return at ?? undefined;
  }

  #answer(row: KeyRow): KeptAnswer {
    return {
      status: row.answer_status as number,
      headers: JSON.parse(row.answer_headers ?? "{}") as Record<string, string>,
      body: this.parts.get(row.run_id, "answer") ?? new ArrayBuffer(0),
    };
  }

  #forget(keyHash: string): void {
    const gone = this.sql
      .exec<{ run_id: string }>(
        "DELETE FROM idempotency_keys WHERE key_hash = ? RETURNING run_id",
        keyHash,
      )
      .toArray()[0];
    if (gone) this.parts.drop(gone.run_id, "answer");
  }
}

/**
 * The first version's keys (a kept answer's parts counted in `answer_parts`, kept apart in
 * `idempotency_answers`), as a `git pull` leaves them in RUNLET_HOME/wrangler: their table is
 * made anew. Those keys were hashed without the app's id, so no call can find them again; kept,
 * the table failed every keyed call of its shard (no such column: answer_kept).
 */
function dropFirstKeys(sql: SqlStorage): void {
  const first = sql
    .exec("SELECT 1 FROM pragma_table_info('idempotency_keys') WHERE name = 'answer_parts'")
    .toArray();
  if (first.length > 0)
    sql.exec("DROP TABLE idempotency_keys; DROP TABLE IF EXISTS idempotency_answers");
}

const KEY_REUSED =
  "this Idempotency-Key was used with a different request (method, path, query or body): use a new key for a new request";

function tooLarge(runId: string): string {
  return `the answer of this Idempotency-Key's run (${runId}) was not kept (larger than 10 MiB, or cut off): read the run instead`;
}

export function stillRunning(runId: string): string {
  // Its id led to `runlet status`, whose 404 ("not found") read as a run that never was.
  return `the run of this Idempotency-Key (${runId}) has not answered yet: try again once it has (a sync run can be read by its id once it has been on its replica for a second, or has answered)`;
}
