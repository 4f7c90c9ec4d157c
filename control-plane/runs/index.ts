/**
 * The runs index: one row per run. The runtime host reports the runs it served and the async
 * runs it ran (batched); the Worker the runs the host failed or never got, and the ends an async
 * run's record decided itself (cancelled, failed by its watchdog or by a host's refusal).
 */
import {
  and,
  desc,
  eq,
  getTableColumns,
  inArray,
  isNull,
  lt,
  lte,
  notInArray,
  or,
  type SQL,
  sql,
} from "drizzle-orm";
import { MAX_GRACE_PERIOD_S, MAX_QUEUE_TIMEOUT_S } from "../../common/app-limits.ts";
import { idsFrom } from "../../common/ids.ts";
import {
  ENDED_STATUSES,
  RUN_RETENTION_MS,
  type RunReport,
  type RunStatus,
  type WebhookState,
} from "../../common/protocol/runs.ts";
import type { Database } from "../db/index.ts";
import { runs } from "../db/schema.ts";
import type { PagePosition } from "../page-token.ts";
import { settleLostSync } from "./lost-sync.ts";

/**
 * The delivery ends after the run: its state is written even once the run's is final, and a
 * late report of `pending` never replaces how it ended.
 */
function webhookOf(db: Database, id: string, webhook: NonNullable<RunReport["webhook"]>) {
  return db
    .update(runs)
    .set({ webhookState: webhook.state, webhookAttempts: webhook.attempts })
    .where(
      and(
        eq(runs.id, id),
        sql`(${runs.webhookState} is null or ${runs.webhookState} = 'pending' or ${webhook.state} <> 'pending')`,
      ),
    );
}

/**
 * Rows in one statement of `recordRuns`: they travel as one JSON text, one parameter (D1 binds at
 * most 100 to a statement), and this many keep it below D1's 2 MB for one value (a row's JSON
 * is at most about 8 KB: an error is cut at 1,000 characters and a function's name at 256, and
 * a character takes at most 6 bytes in JSON).
 */
const ROWS_PER_STATEMENT = 100;

/** The runs table's columns, in the order an insert names them (its definition's). */
const COLUMNS = Object.keys(getTableColumns(runs)) as Array<keyof typeof runs.$inferInsert>;

/** In a `u` regex a pair is one code point: only a half on its own matches. */
const LONE = /\p{Surrogate}/gu;

/**
 * A report as its row's values, in the order of COLUMNS. Text as the database would store it
 * when bound: a lone half of a UTF-16 pair becomes U+FFFD (in JSON it is an escape, which SQLite
 * would decode into bytes no UTF-8 text holds, and libSQL would fail on reading back).
 */
function rowOf(r: RunReport & { id: string }) {
  const text = (s: string | null | undefined) => s?.replace(LONE, "\uFFFD") ?? null;
  const row: typeof runs.$inferInsert = {
    id: r.id,
    projectId: r.projectId,
    app: r.app,
    fn: r.function,
    async: r.async,
    createdAt: r.createdAt,
    status: r.status,
    finishedAt: r.finishedAt ?? null,
    runTimeMs: r.runTimeMs ?? null,
    host: r.host ?? null,
    error: r.error ?? null,
    statusCode: r.statusCode ?? null,
    webhookState: r.webhook?.state ?? null,
    webhookAttempts: r.webhook?.attempts ?? null,
  };
  return COLUMNS.map((key) => {
    const value = row[key];
    return typeof value === "string" ? text(value) : (value ?? null);
  });
}

/** Each row of a JSON array of rows (from `rowOf`) as the values of the runs table's columns. */
const FROM_JSON = sql.raw(COLUMNS.map((_, i) => `json_extract(value, '$[${i}]')`).join(", "));

/**
 * Inserts runs or moves them to their reported state, unless they already ended (a cancel may
 * still gain the run time it lacked). The rows go
 * as one JSON text, read by `json_each`: the statement's text is the same for any number of
 * rows. Built by Drizzle as a multi-row `VALUES` of 6 rows each, building and preparing the
 * statements was half the runs index's CPU; with the JSON text a report in a batch of 100 costs
 * less than half as much, in one of 20 about a quarter less, in one of 4 the same (there the
 * batch's own cost decides: docs/benchmarks.md, 2026-11-26, afternoon). With `decides` (the
 * report comes from the run's own record, its Durable Object) an end replaces an end the
 * runtime host reported: a run cancelled, or given up by the watchdog, as the host finished it.
 */
export function recordRuns(
  db: Database,
  reports: ReadonlyArray<RunReport & { id: string }>,
  decides = false,
) {
  // Never out of a final state, and never back from running to queued (a shard's report of the
  // acceptance may come after the host's of the start).
  const moves = and(
    notInArray(runs.status, [...ENDED_STATUSES]),
    sql`not (${runs.status} = 'running' and excluded.status = 'queued')`,
  );
  const ended = sql.raw(`excluded.status in (${ENDED_STATUSES.map((s) => `'${s}'`).join(", ")})`);
  // A cancel again with the run time it lacked: a run started the instant it was cancelled,
  // whose host's answer to the cancel came after the index had the cancel. Only a cancel: a
  // failure's second report (the host's, after the Worker's) would replace its error too.
  const timed = sql`(${runs.status} = 'cancelled' and excluded.status = 'cancelled' and ${runs.runTimeMs} is null and excluded.run_time_ms is not null)`;
  const statements = [];
  for (let at = 0; at < reports.length; at += ROWS_PER_STATEMENT) {
    const rows = JSON.stringify(reports.slice(at, at + ROWS_PER_STATEMENT).map(rowOf));
    statements.push(
      db
        .insert(runs)
        // `where true`: SQLite's grammar needs a WHERE between a SELECT and its ON CONFLICT.
        .select(sql`select ${FROM_JSON} from json_each(${rows}) where true`)
        .onConflictDoUpdate({
          target: runs.id,
          set: {
            status: sql`excluded.status`,
            finishedAt: sql`excluded.finished_at`,
            runTimeMs: sql`excluded.run_time_ms`,
            host: sql`coalesce(excluded.host, ${runs.host})`,
            error: sql`excluded.error`,
            statusCode: sql`coalesce(excluded.status_code, ${runs.statusCode})`,
          },
          where: decides ? or(ended, moves) : or(moves, timed),
        }),
    );
  }
  for (const r of reports) if (r.webhook) statements.push(webhookOf(db, r.id, r.webhook));
  return statements;
}

/** The longest a run can go without ending: the longest queue_timeout, then grace period. */
const LONGEST_RUN_MS = (MAX_QUEUE_TIMEOUT_S + MAX_GRACE_PERIOD_S) * 1000;

/** Runs forgotten at most with each batch of reports: as many as a batch may hold. */
export const FORGOTTEN_PER_BATCH = 500;

/**
 * Removes the oldest runs that ended more than `RUN_RETENTION_MS` ago (the run store has let
 * them go too), at most `limit`; and a run whose end never came, once it is that much older
 * than the longest a run can last. Run ids sort by creation time, so the runs to look at are a
 * range of the primary key, oldest first: neither a scan of the table nor an index of its own.
 */
export function forgetOldRuns(db: Database, now: number, limit = FORGOTTEN_PER_BATCH) {
  const before = now - RUN_RETENTION_MS;
  const old = db
    .select({ id: runs.id })
    .from(runs)
    .where(
      and(
        lt(runs.id, idsFrom("run", before)),
        or(
          lt(runs.finishedAt, before),
          and(isNull(runs.finishedAt), lt(runs.createdAt, before - LONGEST_RUN_MS)),
        ),
      ),
    )
    .orderBy(runs.id)
    .limit(limit);
  return db.delete(runs).where(inArray(runs.id, old));
}

export interface RunQuery {
  projectId: string;
  app?: string;
  status?: RunStatus;
  async?: boolean;
  /** Only runs whose latest delivery is in this state. */
  webhook?: WebhookState;
  limit: number;
  after?: PagePosition;
}

export async function listRuns(db: Database, q: RunQuery) {
  const where: SQL[] = [eq(runs.projectId, q.projectId)];
  if (q.app) where.push(eq(runs.app, q.app));
  if (q.status) where.push(eq(runs.status, q.status));
  if (q.async !== undefined) where.push(eq(runs.async, q.async));
  if (q.webhook) where.push(eq(runs.webhookState, q.webhook));
  if (q.after) {
    // The bound on created_at lets the index range start at the cursor (see audit/list.ts).
    where.push(lte(runs.createdAt, q.after.timestamp));
    where.push(sql`(${runs.createdAt}, ${runs.id}) < (${q.after.timestamp}, ${q.after.id})`);
  }
  const rows = await db
    .select()
    .from(runs)
    .where(and(...where))
    .orderBy(desc(runs.createdAt), desc(runs.id))
    .limit(q.limit + 1);
  const hasMore = rows.length > q.limit;
  return { rows: await settleLostSync(db, hasMore ? rows.slice(0, q.limit) : rows), hasMore };
}

/** The run `id` if it is one of `projectId`'s. */
export async function findRun(db: Database, projectId: string, id: string) {
  const [row] = await db
    .select()
    .from(runs)
    .where(and(eq(runs.projectId, projectId), eq(runs.id, id)));
  return row && (await settleLostSync(db, [row]))[0];
}

export function runView(row: typeof runs.$inferSelect) {
  return {
    id: row.id,
    app: row.app,
    function: row.fn,
    async: row.async,
    status: row.status,
    createdAt: new Date(row.createdAt).toISOString(),
    finishedAt: row.finishedAt === null ? null : new Date(row.finishedAt).toISOString(),
    runTimeMs: row.runTimeMs,
    host: row.host,
    ...(row.error !== null ? { error: { message: row.error } } : {}),
    ...(row.statusCode !== null ? { statusCode: row.statusCode } : {}),
    webhook:
      row.webhookState === null
        ? null
        : { state: row.webhookState, attempts: row.webhookAttempts ?? 0 },
  };
}
