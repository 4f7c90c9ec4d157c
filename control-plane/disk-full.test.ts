// A full disk: a change the database cannot take is a 507 {message} with nothing changed, and
// the audit entry of that failure, which cannot be written then either, is written once the
// database takes writes again. The database is made full for real: SQLite's max_page_count.
import { writeFile } from "node:fs/promises";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hold, writeHeld } from "./audit/backlog.ts";
import { auditRow } from "./audit/record.ts";
import { isDiskFull, isLocked } from "./errors.ts";
import { fillDatabase } from "./testing/full-disk.ts";
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
    const makeRoom = await fillDatabase(db);

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

    await makeRoom();
    // Two requests at once both find entries held: each is written once.
    const other = f.call("PUT", `/v2/projects/${f.projectId}/secrets/OTHER`, {
      body: { value: "x" },
    });
    const [one, two] = await Promise.all([putSecret("s3cret"), other]);
    expect([one.status, two.status]).toEqual([204, 204]);
    expect((await failures()).length).toBe(REFUSED);
    expect((await auditOf())[0]?.outcome).toBe("success"); // the held ones were written first
  });

  it("writes each held entry once, however many requests find them at once", async () => {
    const ids = ["log_held_a", "log_held_b", "log_held_c", "log_held_d"];
    for (const id of ids) {
      const row = auditRow({
        id,
        projectId: f.projectId,
        timestamp: Date.now(),
        action: "secrets.write",
        actorType: "user",
        actorId: f.owner.id,
        actorName: f.owner.name,
        outcome: "failure",
        targetType: "secret",
        targetId: "X",
        requestId: "req_held",
        ip: null,
        userAgent: null,
        metadata: { status: 507 },
      });
      hold(f.deps.db, row, new Error("database or disk is full"));
    }
    await Promise.all([writeHeld(f.deps.db), writeHeld(f.deps.db), writeHeld(f.deps.db)]);
    const rows = await f.deps.db.all(sql`SELECT id FROM audit_log WHERE request_id = 'req_held'`);
    expect(rows.map((r) => (r as { id: string }).id).sort()).toEqual(ids);
  });

  it("is told by the file system's ENOSPC as well as SQLite's", async () => {
    const err = await writeFile("/dev/full", "x").catch((e: unknown) => e);
    expect(isDiskFull(err)).toBe(true);
    expect(isDiskFull(new Error("D1_ERROR: database or disk is full: SQLITE_FULL"))).toBe(true);
    expect(isDiskFull(new Error("UNIQUE constraint failed"))).toBe(false);
    // A locked database, as drizzle reports it: the driver's error is the cause.
    const busy = Object.assign(new Error("database is locked"), { code: "SQLITE_BUSY" });
    expect(isLocked(new Error("Failed query: insert into …", { cause: busy }))).toBe(true);
    expect(isLocked(new Error("Failed query: insert into …"))).toBe(false);
  });
});
