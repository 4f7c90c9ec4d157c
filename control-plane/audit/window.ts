/**
 * The time window of an audit-log query (the list and the export): the plan's retention window,
 * `from` clamped into it, `to` by default now. A window wholly before the plan's is empty, not
 * an error; `from` later than `to` is a 400.
 */
import { eq } from "drizzle-orm";
import type { Database } from "../db/index.ts";
import { projects } from "../db/schema.ts";
import { ApiError } from "../errors.ts";
import { DAY_MS, RETENTION_DAYS } from "../plans.ts";

/** How many days back the project's plan lets it read. */
export async function retentionDaysOf(db: Database, projectId: string): Promise<number> {
  const [project] = await db
    .select({ plan: projects.plan })
    .from(projects)
    .where(eq(projects.id, projectId));
  return RETENTION_DAYS[project?.plan ?? "hobby"];
}

/** Throws 400 when `from` is later than `to` (both as given). */
export function checkOrder(query: { from?: string; to?: string }): void {
  if (query.from && query.to && Date.parse(query.from) > Date.parse(query.to)) {
    throw new ApiError("bad_request", "from must not be later than to");
  }
}

export function auditWindow(
  retentionDays: number,
  query: { from?: string; to?: string },
  now = Date.now(),
): { fromMs: number; toMs: number; empty: boolean } {
  const windowStart = now - retentionDays * DAY_MS;
  const fromMs = Math.max(query.from ? Date.parse(query.from) : windowStart, windowStart);
  const toMs = query.to ? Date.parse(query.to) : now;
  return { fromMs, toMs, empty: fromMs > toMs };
}
