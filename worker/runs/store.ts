/**
 * A shard's runs as SQLite rows (the Durable Object's own database): one row per run, written
 * in place as the run moves, and removed `RETAIN_MS` after it ended and its delivery is over.
 * `due_at` is when the shard's one alarm must next look at the row: a queued run's expiry, a
 * running run's next question to the host, a delivery's next attempt, a finished row's removal.
 * `indexed` is 0 for a run whose state the runs index has not confirmed yet: an async run's
 * (queued, or its end), and any run's webhook delivery (pending, then delivered or failed).
 * Every call here is synchronous: a read-modify-write in one call cannot interleave with another.
 */
import { RUN_RETENTION_MS, type RunStatus } from "../../common/protocol/runs.ts";
import { HookRows } from "./hook-rows.ts";
import { inParts, type RunParts } from "./parts.ts";
import {
  ADDED_COLUMNS,
  COLUMNS,
  type HookColumns,
  INDEXES,
  type IndexRow,
  type QueuedRun,
  type RowChanges,
  type RunRow,
  SCHEMA,
  type ShardInfo,
} from "./rows.ts";
import type { AppLimits, AppRequest } from "./types.ts";

/** How long a run's row is kept after it ended and its delivery is over. */
export const RETAIN_MS = RUN_RETENTION_MS;

export class RunStore {
  /** The webhook delivery's columns. */
  readonly hooks: HookRows;

  constructor(
    private readonly sql: SqlStorage,
    /** The values too large for their column (parts.ts). */
    private readonly parts: RunParts,
  ) {
    sql.exec(SCHEMA);
    const have = new Set(
      sql
        .exec<{ name: string }>("SELECT name FROM pragma_table_info('runs')")
        .toArray()
        .map((c) => c.name),
    );
    for (const [column, type] of Object.entries(ADDED_COLUMNS))
      if (!have.has(column)) sql.exec(`ALTER TABLE runs ADD COLUMN ${column} ${type}`);
    sql.exec(INDEXES);
    this.hooks = new HookRows(sql, parts);
  }

  info(): ShardInfo | undefined {
    return this.sql
      .exec<ShardInfo>("SELECT project, app, origin, capacity FROM shard")
      .toArray()[0];
  }

  saveInfo(info: ShardInfo): void {
    this.sql.exec(
      `INSERT INTO shard (key, project, app, origin, capacity) VALUES (1, ?, ?, ?, ?)
       ON CONFLICT (key) DO UPDATE SET origin = excluded.origin, capacity = excluded.capacity`,
      info.project,
      info.app,
      info.origin,
      info.capacity,
    );
  }

  count(status: RunStatus): number {
    return this.sql
      .exec<{ n: number }>("SELECT count(*) AS n FROM runs WHERE status = ?", status)
      .one().n;
  }

  get(id: string): RunRow | undefined {
    return this.sql.exec<RunRow>(`SELECT ${COLUMNS} FROM runs WHERE id = ?`, id).toArray()[0];
  }

  /** The app a run was accepted for (null: before runs kept it; undefined: no such run). */
  appIdOf(id: string): string | null | undefined {
    return this.sql
      .exec<{ app_id: string | null }>("SELECT app_id FROM runs WHERE id = ?", id)
      .toArray()[0]?.app_id;
  }

  /** A new async run, queued until `limits.queueTimeout` seconds from its creation. */
  insertQueued(
    run: {
      id: string;
      project: string;
      app: string;
      fn: string;
      createdAt: number;
      appId?: string;
    },
    limits: AppLimits,
    payload: ArrayBuffer,
    request: AppRequest | undefined,
    hook: HookColumns | undefined,
  ): void {
    const expiresAt = run.createdAt + limits.queueTimeout * 1000;
    this.sql.exec(
      `INSERT INTO runs (id, project, app, fn, async, status, created_at, expires_at, payload,
         request, hook_target, hook_signed, hook_state, hook_attempts, hook_url, hook_secret, due_at,
         indexed, app_id)
       VALUES (?, ?, ?, ?, 1, 'queued', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?)`,
      run.id,
      run.project,
      run.app,
      run.fn,
      run.createdAt,
      expiresAt,
      inParts(payload) ? null : payload,
      request ? JSON.stringify(request) : null,
      hook?.target ?? null,
      hook ? Number(hook.signed) : null,
      hook ? "pending" : null,
      hook ? "[]" : null,
      hook?.url ?? null,
      hook?.secret ?? null,
      expiresAt,
      run.appId ?? null,
    );
    if (inParts(payload)) this.parts.put(run.id, "payload", new Uint8Array(payload));
  }

  /** A sync run that answered its caller and has a webhook: recorded as it ended. */
  insertEnded(
    run: { id: string; project: string; app: string; fn: string; createdAt: number },
    hook: HookColumns,
  ): void {
    this.sql.exec(
      `INSERT INTO runs (id, project, app, fn, async, status, created_at, started_at, hook_target,
         hook_signed, hook_state, hook_attempts, hook_url, hook_secret)
       VALUES (?, ?, ?, ?, 0, 'running', ?, ?, ?, ?, 'pending', '[]', ?, ?)`,
      run.id,
      run.project,
      run.app,
      run.fn,
      run.createdAt,
      run.createdAt,
      hook.target,
      Number(hook.signed),
      hook.url,
      hook.secret ?? null,
    );
  }

  /** The ids of the oldest queued runs, first come first served. */
  oldestQueued(limit: number): string[] {
    return this.sql
      .exec<{ id: string }>(
        "SELECT id FROM runs WHERE status = 'queued' ORDER BY created_at, id LIMIT ?",
        limit,
      )
      .toArray()
      .map((r) => r.id);
  }

  /** What a queued run hands to the host: its function, body and (custom apps) request. */
  queued(id: string): QueuedRun | undefined {
    const row = this.sql
      .exec<{
        id: string;
        fn: string;
        payload: ArrayBuffer | null;
        request: string | null;
        app_id: string | null;
        hooked: number;
      }>(
        `SELECT id, fn, payload, request, app_id, hook_state IS NOT NULL AS hooked FROM runs
         WHERE id = ? AND status = 'queued'`,
        id,
      )
      .toArray()[0];
    if (!row) return undefined;
    const payload = row.payload ?? this.parts.get(id, "payload") ?? null;
    return {
      ...row,
      payload,
      request: row.request ? (JSON.parse(row.request) as AppRequest) : null,
    };
  }

  /** Rows whose `due_at` has come, soonest first. */
  due(now: number, limit: number): RunRow[] {
    return this.sql
      .exec<RunRow>(
        `SELECT ${COLUMNS} FROM runs WHERE due_at IS NOT NULL AND due_at <= ? ORDER BY due_at LIMIT ?`,
        now,
        limit,
      )
      .toArray();
  }

  /** The soonest `due_at` of any row. */
  nextDue(): number | undefined {
    const { at } = this.sql
      .exec<{ at: number | null }>("SELECT min(due_at) AS at FROM runs WHERE due_at IS NOT NULL")
      .one();
    return at ?? undefined;
  }

  /** Every running run is due now (after a restart: ask the host about each at once). */
  checkRunningNow(now: number): void {
    this.sql.exec("UPDATE runs SET due_at = ? WHERE status = 'running' AND async = 1", now);
  }

  /** Writes the row's changed columns (and `payload`/`request` dropped once the run left the queue). */
  update(id: string, changes: RowChanges, dropQueued = false): void {
    const names = Object.keys(changes);
    const sets = names.map((n) => `${n} = ?`);
    if (dropQueued) sets.push("payload = NULL", "request = NULL");
    if (dropQueued) this.parts.drop(id, "payload");
    if (sets.length === 0) return;
    this.sql.exec(
      `UPDATE runs SET ${sets.join(", ")} WHERE id = ?`,
      ...names.map((n) => changes[n] as SqlStorageValue),
      id,
    );
  }

  /** Runs whose state the runs index has not confirmed, in the order they changed. */
  unindexed(limit: number): IndexRow[] {
    return this.sql
      .exec<IndexRow>(
        `SELECT id, project, app, fn, async, status, created_at, finished_at, run_time_ms,
           hook_state, hook_attempts, host_id, error, status_code FROM runs
         WHERE indexed = 0 ORDER BY coalesce(finished_at, created_at) LIMIT ?`,
        limit,
      )
      .toArray();
  }

  /** The index has these rows in these states (a row that moved on since is sent again). */
  markIndexed(
    sent: ReadonlyArray<
      Pick<IndexRow, "id" | "status" | "hook_state" | "hook_attempts" | "run_time_ms">
    >,
  ) {
    // One statement for the batch (one per row cost a statement per run and report). A run
    // time learnt after its end was sent (a cancel the host answers late) is sent again.
    const rows = sent.map((r) => [r.id, r.status, r.hook_state, r.hook_attempts, r.run_time_ms]);
    this.sql.exec(
      `UPDATE runs SET indexed = 1 FROM json_each(?) AS s
       WHERE runs.id = s.value ->> 0 AND runs.status = s.value ->> 1
         AND runs.hook_state IS s.value ->> 2 AND runs.hook_attempts IS s.value ->> 3
         AND runs.run_time_ms IS s.value ->> 4`,
      JSON.stringify(rows),
    );
  }

  remove(id: string): void {
    this.sql.exec("DELETE FROM runs WHERE id = ?", id);
    this.parts.drop(id);
  }
}
