// A full disk: a change the database cannot take is a 507 {message} with nothing changed, and
// the audit entry of that failure, which cannot be written then either, is written once the
// database takes writes again. The database is made full for real: SQLite's max_page_count.
import { writeFile } from "node:fs/promises";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isDiskFull } from "./errors.ts";
import { libsqlFixture } from "./testing/libsql.ts";

let f: Awaited<ReturnType<typeof libsqlFixture>>;
beforeAll(async () => {
  f = await libsqlFixture();
});
afterAll(() => f.cleanup());

/** The project's secrets.write entries, newest first (up to 200). */
async function auditOf() {
  const path = `/v2/projects/${f.projectId}/audit-log?action=secrets.write&limit=200`;
  const body = (await (await f.call("GET", path)).json()) as {
    logs: Array<{ outcome: string; metadata: { status?: number } }>;
  };
  return body.logs;
}

const putSecret = (value: string) =>
  f.call("PUT", `/v2/projects/${f.projectId}/secrets/API_KEY`, { body: { value } });

describe("a full disk", () => {
  it("is a 507 with nothing changed, and its failure reaches the audit log once there is room", async () => {
    const { db } = f.deps;
    await db.run(sql`CREATE TABLE filler (x TEXT)`);
    const [{ page_count: pages }] = (await db.all(sql`PRAGMA page_count`)) as [
      { page_count: number },
    ];
    await db.run(sql.raw(`PRAGMA max_page_count = ${pages}`));
    // Fill what is left of the file's pages, so no write fits.
    for (let size = 4096; size >= 16; size /= 2) {
      for (let i = 0; i < 1_000; i++) {
        const full = await db
          .run(sql`INSERT INTO filler VALUES (${"x".repeat(size)})`)
          .then(() => false, isDiskFull);
        if (full) break;
      }
    }

    // A secret too large for what is left; each refusal's own entry fits for a while, then not.
    const REFUSED = 100;
    for (let i = 0; i < REFUSED; i++) {
      const refused = await putSecret("x".repeat(20_000));
      expect(refused.status).toBe(507);
      expect(await refused.json()).toEqual({
        message: expect.stringMatching(/^the control plane's disk is full, so nothing was changed/),
        code: "insufficient_storage",
      });
    }
    const failures = async () =>
      (await auditOf()).filter((e) => e.outcome === "failure" && e.metadata.status === 507);
    expect((await failures()).length).toBeLessThan(REFUSED); // some were held in memory

    await db.run(sql.raw("PRAGMA max_page_count = 1073741823"));
    expect((await putSecret("s3cret")).status).toBe(204);
    expect((await failures()).length).toBe(REFUSED);
    expect((await auditOf())[0]?.outcome).toBe("success"); // the held ones were written first
  });

  it("is told by the file system's ENOSPC as well as SQLite's", async () => {
    const err = await writeFile("/dev/full", "x").catch((e: unknown) => e);
    expect(isDiskFull(err)).toBe(true);
    expect(isDiskFull(new Error("D1_ERROR: database or disk is full: SQLITE_FULL"))).toBe(true);
    expect(isDiskFull(new Error("UNIQUE constraint failed"))).toBe(false);
  });
});
