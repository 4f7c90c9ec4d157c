/**
 * Failure entries the database would not take when they were made (a full disk, a locked file):
 * held in this process's memory, at most MAX_HELD, and written at the next audited request once
 * the database takes writes again (after that request's own change), oldest first. A success
 * entry is never held: it is written in the same batch as its change, which fails with it. A
 * process that ends while it holds entries loses them, and says so in its log as each is held.
 */
import type { Database } from "../db/index.ts";
import { auditLog } from "../db/schema.ts";

type Row = typeof auditLog.$inferInsert;

const MAX_HELD = 1_000;
const held = new WeakMap<Database, Row[]>();
/** The write of held entries under way: one at a time, or two would write the same entry. */
const writing = new WeakMap<Database, Promise<void>>();

/** Keeps `row` for a later try; past MAX_HELD the oldest is dropped, and logged. */
export function hold(db: Database, row: Row, err: unknown): void {
  const rows = held.get(db) ?? [];
  held.set(db, rows);
  rows.push(row);
  let cause = err;
  while (cause instanceof Error && cause.cause instanceof Error) cause = cause.cause;
  console.error(
    `[control-plane] audit entry ${row.id} (a failed ${row.action}) is held in memory until the database takes it (${cause instanceof Error ? cause.message : cause})`,
  );
  const dropped = rows.splice(0, Math.max(0, rows.length - MAX_HELD));
  for (const row of dropped) {
    console.error(`[control-plane] audit entry ${row.id} (${row.action}) dropped: too many held`);
  }
}

/** Writes the held entries, oldest first; stops at the first the database still refuses. */
export function writeHeld(db: Database): Promise<void> {
  const rows = held.get(db);
  if (!rows || rows.length === 0) return Promise.resolve();
  let under = writing.get(db);
  if (!under) {
    under = writeEach(db, rows).finally(() => writing.delete(db));
    writing.set(db, under);
  }
  return under;
}

async function writeEach(db: Database, rows: Row[]): Promise<void> {
  for (let row = rows[0]; row; row = rows[0]) {
    try {
      await db.insert(auditLog).values(row);
    } catch {
      return;
    }
    rows.shift();
  }
}
