import { type SQL, sql } from "drizzle-orm";
import type { SQLiteColumn } from "drizzle-orm/sqlite-core";

/**
 * Whether `column` holds `name` in either case: users read `ci` and `CI` as one name, so the
 * checks that keep a live name unique compare with this. ASCII letters only: SQLite's `lower()`
 * (libSQL's and D1's, neither with ICU) folds `A`–`Z` alone, so `É` and `é` stay two names
 * (docs/api.md, "Names in either case").
 */
export const namesMatch = (column: SQLiteColumn, name: string): SQL =>
  sql`lower(${column}) = lower(${name})`;
