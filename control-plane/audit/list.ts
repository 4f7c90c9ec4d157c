import { and, desc, eq, gte, lte, type SQL, sql } from "drizzle-orm";
import { unionAll } from "drizzle-orm/sqlite-core";
import type { Database } from "../db/index.ts";
import { auditLog } from "../db/schema.ts";
import type { PagePosition } from "../page-token.ts";
import type { AuditAction, Outcome } from "./actions.ts";
import { subjectKey } from "./keys.ts";

export interface AuditQuery {
  projectId: string;
  /** Inclusive bounds, Unix milliseconds. */
  fromMs: number;
  toMs: number;
  action?: AuditAction;
  actor?: string;
  outcome?: Outcome;
  limit: number;
  /** Continue after this entry, `id` being its `seq` (keyset pagination; never OFFSET). */
  after?: PagePosition;
}

export type AuditRow = typeof auditLog.$inferSelect;

/**
 * One page of a project's audit log, newest first, ties (entries of one millisecond) broken by
 * the order they were written, latest first. Each action/actor combination has an index ending
 * in (outcome, timestamp, seq): with an outcome filter the page is one range scan, without one
 * it is one per outcome, merged; either way it costs the same however deep the page is.
 */
export async function listAuditEntries(
  db: Database,
  q: AuditQuery,
): Promise<{ rows: AuditRow[]; hasMore: boolean }> {
  const rows = await auditPageQuery(db, q);
  const hasMore = rows.length > q.limit;
  return { rows: hasMore ? rows.slice(0, q.limit) : rows, hasMore };
}

/** The statement of one page (exported for the benchmark's query plans). */
export function auditPageQuery(db: Database, q: AuditQuery) {
  // Continuing after an entry: the window ends at its timestamp, so the index range starts
  // there (a deep page costs what the first does); the row value settles ties within that ms.
  const toMs = q.after ? Math.min(q.toMs, q.after.timestamp) : q.toMs;
  const where: SQL[] = [
    eq(auditLog.projectKey, subjectKey(q.projectId)),
    eq(auditLog.projectId, q.projectId),
    gte(auditLog.timestamp, q.fromMs),
    lte(auditLog.timestamp, toMs),
  ];
  if (q.action) where.push(eq(auditLog.action, q.action));
  if (q.actor)
    where.push(eq(auditLog.actorKey, subjectKey(q.actor)), eq(auditLog.actorId, q.actor));
  if (q.after) {
    where.push(
      sql`(${auditLog.timestamp}, ${auditLog.seq}) < (${q.after.timestamp}, ${q.after.id})`,
    );
  }
  const newestFirst = [desc(auditLog.timestamp), desc(auditLog.seq)] as const;
  const scan = (outcome: Outcome) =>
    db
      .select()
      .from(auditLog)
      .where(and(...where, eq(auditLog.outcome, outcome)))
      .orderBy(...newestFirst)
      .limit(q.limit + 1);
  if (q.outcome) return scan(q.outcome);
  // No outcome filter: one range scan per outcome, merged by SQLite into one page.
  return unionAll(
    db.select().from(scan("success").as("successes")),
    db.select().from(scan("failure").as("failures")),
  )
    .orderBy(...newestFirst)
    .limit(q.limit + 1);
}

/** An entry as the API returns it. */
export function auditEntryView(row: AuditRow) {
  return {
    id: row.id,
    timestamp: new Date(row.timestamp).toISOString(),
    action: row.action,
    actor: { type: row.actorType, id: row.actorId, name: row.actorName },
    outcome: row.outcome,
    target: { type: row.targetType, id: row.targetId },
    requestId: row.requestId,
    ip: row.ip,
    userAgent: row.userAgent,
    metadata: row.metadata,
  };
}
