import { fileURLToPath } from "node:url";
import { type Client, createClient } from "@libsql/client";
import { drizzle } from "drizzle-orm/libsql";
import { migrate } from "drizzle-orm/libsql/migrator";
import type { BaseSQLiteDatabase } from "drizzle-orm/sqlite-core";
import * as schema from "./schema.ts";

/**
 * What the control-plane app needs of its database: an async Drizzle SQLite database with our
 * schema. libSQL (Node) and D1 (Workers) both satisfy it; `batch` gives atomic multi-statement
 * writes on both, where interactive transactions do not exist on D1.
 */
// biome-ignore lint/suspicious/noExplicitAny: the run-result type differs between libSQL and D1 and is never read.
export type Database = BaseSQLiteDatabase<"async", any, typeof schema> & {
  // biome-ignore lint/suspicious/noExplicitAny: Drizzle's batch accepts its own query builders; their union type is not exported.
  batch(queries: readonly [any, ...any[]]): Promise<unknown>;
};

export const MIGRATIONS_DIR = fileURLToPath(new URL("./migrations", import.meta.url));

/** Opens (and migrates) a libSQL database: `file:/path/runlet.db`, `:memory:`, or a libsql:// URL. */
export async function openLibsql(
  url: string,
  authToken?: string,
): Promise<{ db: Database; client: Client; close(): void }> {
  const client = createClient({ url, authToken });
  await client.execute("PRAGMA foreign_keys = ON");
  if (url.startsWith("file:")) {
    await client.execute("PRAGMA journal_mode = WAL");
    await client.execute("PRAGMA busy_timeout = 5000");
    // 64 MiB of page cache (SQLite's default is 2 MiB): the audit indexes' hot pages stay in
    // memory between writes instead of being read back for each entry.
    await client.execute("PRAGMA cache_size = -65536");
  }
  const db = drizzle(client, { schema });
  await migrate(db, { migrationsFolder: MIGRATIONS_DIR });
  return { db: db as unknown as Database, client, close: () => client.close() };
}
