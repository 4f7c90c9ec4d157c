import { and, desc, eq, gte, lte, type SQL, sql } from "drizzle-orm";
import type { Database } from "../db/index.ts";
import { auditLog } from "../db/schema.ts";
import type { PagePosition } from "../page-token.ts";
import type { AuditAction, Outcome } from "./actions.ts";

export interface AuditQuery {
  projectId: string;
  /** Inclusive bounds, Unix milliseconds. */
  fromMs: number;
  toMs: number;
  action?: AuditAction;
  actor?: string;
  outcome?: Outcome;
  limit: number;
  /** Continue after this entry (keyset pagination; never OFFSET). */
  after?: PagePosition;
}

export type AuditRow = typeof auditLog.$inferSelect;

/**
 * One page of a project's audit log, newest first, ties broken by id (descending). Each filter
 * combination has an index ending in (timestamp, id), so the page is one range scan however deep.
 */
export async function listAuditEntries(
  db: Database,
  q: AuditQuery,
): Promise<{ rows: AuditRow[]; hasMore: boolean }> {
  // Continuing after an entry: the window ends at its timestamp, so the index range starts
  // there (a deep page costs what the first does); the row value settles ties within that ms.
  const toMs = q.after ? Math.min(q.toMs, q.after.timestamp) : q.toMs;
  const where: SQL[] = [
    eq(auditLog.projectId, q.projectId),
    gte(auditLog.timestamp, q.fromMs),
    lte(auditLog.timestamp, toMs),
  ];
  if (q.action) where.push(eq(auditLog.action, q.action));
  if (q.actor) where.push(eq(auditLog.actorId, q.actor));
  if (q.outcome) where.push(eq(auditLog.outcome, q.outcome));
  if (q.after) {
    where.push(
      sql`(${auditLog.timestamp}, ${auditLog.id}) < (${q.after.timestamp}, ${q.after.id})`,
    );
  }
  const rows = await db
    .select()
    .from(auditLog)
    .where(and(...where))
    .orderBy(desc(auditLog.timestamp), desc(auditLog.id))
    .limit(q.limit + 1);
  const hasMore = rows.length > q.limit;
  return { rows: hasMore ? rows.slice(0, q.limit) : rows, hasMore };
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
