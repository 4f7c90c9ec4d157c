/** Node tests: a libSQL database made full for real, with SQLite's max_page_count. */
import { sql } from "drizzle-orm";
import type { Database } from "../db/index.ts";
import { isDiskFull } from "../errors.ts";

/**
 * Caps the file at its size and fills what is left of its pages, so no write that needs room
 * fits; the answer makes room again.
 */
export async function fillDatabase(db: Database): Promise<() => Promise<void>> {
  await db.run(sql`CREATE TABLE IF NOT EXISTS filler (x TEXT)`);
  const [{ page_count: pages }] = (await db.all(sql`PRAGMA page_count`)) as [
    { page_count: number },
  ];
  await db.run(sql.raw(`PRAGMA max_page_count = ${pages}`));
  for (let size = 4096; size >= 16; size /= 2) {
    for (let i = 0; i < 1_000; i++) {
      const full = await db
        .run(sql`INSERT INTO filler VALUES (${"x".repeat(size)})`)
        .then(() => false, isDiskFull);
      if (full) break;
    }
  }
  return async () => {
    await db.run(sql.raw("PRAGMA max_page_count = 1073741823"));
  };
}
