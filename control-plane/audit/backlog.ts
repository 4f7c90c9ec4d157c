/**
 * Failure entries the database would not take when they were made (a full disk, a locked file):
 * held in this process's memory, at most MAX_HELD, and written before anything else at the next
 * audited request, once the database takes writes again. A success entry is never held: it is
 * written in the same batch as its change, which fails with it. A process that ends while it
 * holds entries loses them, and says so in its log as each is held.
 */
import type { Database } from "../db/index.ts";
import { auditLog } from "../db/schema.ts";

type Row = typeof auditLog.$inferInsert;

const MAX_HELD = 1_000;
const held = new WeakMap<Database, Row[]>();

/** Keeps `row` for a later try; past MAX_HELD the oldest is dropped, and logged. */
export function hold(db: Database, row: Row, err: unknown): void {
  const rows = held.get(db) ?? [];
  held.set(db, rows);
  rows.push(row);
  let cause = err;
  while (cause instanceof Error && cause.cause instanceof Error) cause = cause.cause;
  console.error(
    `[control-plane] the audit entry of a failed ${row.action} is held in memory until the database takes it (${cause instanceof Error ? cause.message : cause})`,
  );
  const dropped = rows.splice(0, Math.max(0, rows.length - MAX_HELD));
  for (const row of dropped) {
    console.error(`[control-plane] audit entry ${row.id} (${row.action}) dropped: too many held`);
  }
}

/** Writes the held entries, oldest first; stops at the first the database still refuses. */
export async function writeHeld(db: Database): Promise<void> {
  const rows = held.get(db);
  while (rows && rows.length > 0) {
    try {
      await db.insert(auditLog).values(rows[0] as Row);
    } catch {
      return;
    }
    rows.shift();
  }
}
