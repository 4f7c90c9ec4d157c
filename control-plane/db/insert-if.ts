import { getTableColumns, type SQL, sql } from "drizzle-orm";
import type { SQLiteTable } from "drizzle-orm/sqlite-core";
import type { Database } from "./index.ts";

/**
 * `INSERT INTO table SELECT <row> WHERE <condition>`: the row is written only if `condition`
 * holds when the statement runs. In a `db.batch` (one transaction on libSQL and on D1) it sees
 * the batch's earlier statements, so later rows can depend on what an earlier one wrote.
 */
export function insertIf<T extends SQLiteTable>(
  db: Database,
  table: T,
  row: T["$inferInsert"],
  condition: SQL,
) {
  const values = Object.entries(getTableColumns(table)).map(([key, column]) => {
    const value = (row as Record<string, unknown>)[key] ?? column.default;
    return value === undefined || value === null ? sql`null` : sql.param(value, column);
  });
  return db.insert(table).select(sql`select ${sql.join(values, sql`, `)} where ${condition}`);
}
