/** Reads a project's raw audit rows (newest first, latest written first), as the table holds them. */
import { desc, eq } from "drizzle-orm";
import type { Database } from "../db/index.ts";
import { auditLog } from "../db/schema.ts";

export function auditRows(db: Database, projectId: string) {
  return db
    .select()
    .from(auditLog)
    .where(eq(auditLog.projectId, projectId))
    .orderBy(desc(auditLog.timestamp), desc(auditLog.seq));
}
