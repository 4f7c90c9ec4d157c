// Migration 0003 rebuilds the audit table with integer keys. Entries written before it must come
// through whole: the same ids and fields, the same order, and keys computed in SQL that equal
// what the control plane computes in JavaScript (else filters would silently miss old entries).
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "@libsql/client";
import { drizzle } from "drizzle-orm/libsql";
import { migrate } from "drizzle-orm/libsql/migrator";
import { afterAll, expect, it } from "vitest";
import { subjectKey } from "../audit/keys.ts";
import { listAuditEntries } from "../audit/list.ts";
import { type Database, MIGRATIONS_DIR, openLibsql } from "./index.ts";
import { auditLog } from "./schema.ts";

const dir = await mkdtemp(join(tmpdir(), "runlet-audit-migration-"));
afterAll(() => rm(dir, { recursive: true, force: true }));

/** A migrations folder holding only the first `count` migrations. */
async function migrationsUpTo(count: number) {
  const folder = join(dir, `migrations-${count}`);
  await mkdir(join(folder, "meta"), { recursive: true });
  const journal = JSON.parse(await readFile(join(MIGRATIONS_DIR, "meta/_journal.json"), "utf8"));
  journal.entries = journal.entries.slice(0, count);
  await writeFile(join(folder, "meta/_journal.json"), JSON.stringify(journal));
  for (const { tag } of journal.entries) {
    await copyFile(join(MIGRATIONS_DIR, `${tag}.sql`), join(folder, `${tag}.sql`));
  }
  return folder;
}

it("keeps every entry written before the integer keys, in order, found by every filter", async () => {
  const url = `file:${join(dir, "old.db")}`;
  const old = createClient({ url });
  await migrate(drizzle(old), { migrationsFolder: await migrationsUpTo(3) });
  const projectId = "prj_01jz0000000000000000000000";
  await old.execute({
    sql: "INSERT INTO projects (id, name, plan, created_at) VALUES (?, 'old', 'pro', 0)",
    args: [projectId],
  });
  const now = Date.now();
  // Two entries share a millisecond: the old tie-break (id) must become the write order.
  const written = [
    ["log_b", now - 3000, "apps.deploy", "usr_ada", "success"],
    ["log_a", now - 2000, "secrets.read", "sa_ci-bot", "failure"],
    ["log_c", now - 2000, "audit_log.read", "usr_ümlaut", "success"],
    ["log_d", now - 1000, "service_accounts.revoke", "usr_ada", "failure"],
  ] as const;
  for (const [id, timestamp, action, actorId, outcome] of written) {
    await old.execute({
      sql: `INSERT INTO audit_log (id, project_id, timestamp, action, actor_type, actor_id,
              actor_name, outcome, target_type, target_id, request_id, ip, user_agent, metadata)
            VALUES (?, ?, ?, ?, 'user', ?, 'Someone', ?, 'app', 'hello', 'req_1', NULL, NULL, '{"v":1}')`,
      args: [id, projectId, timestamp, action, actorId, outcome],
    });
  }
  old.close();

  const { db, close } = await openLibsql(url); // applies 0003
  try {
    const rows = await db.select().from(auditLog);
    for (const row of rows) {
      expect(row.projectKey).toBe(subjectKey(projectId));
      expect(row.actorKey, row.actorId).toBe(subjectKey(row.actorId));
    }
    const page = async (filter: Partial<Parameters<typeof listAuditEntries>[1]> = {}) =>
      (
        await listAuditEntries(db as Database, {
          projectId,
          fromMs: 0,
          toMs: now,
          limit: 50,
          ...filter,
        })
      ).rows.map((r) => [r.id, r.action, r.actorId, r.outcome, r.metadata]);
    expect(await page()).toEqual([
      ["log_d", "service_accounts.revoke", "usr_ada", "failure", { v: 1 }],
      ["log_c", "audit_log.read", "usr_ümlaut", "success", { v: 1 }],
      ["log_a", "secrets.read", "sa_ci-bot", "failure", { v: 1 }],
      ["log_b", "apps.deploy", "usr_ada", "success", { v: 1 }],
    ]);
    expect((await page({ actor: "usr_ada" })).map((r) => r[0])).toEqual(["log_d", "log_b"]);
    expect((await page({ actor: "usr_ümlaut" })).map((r) => r[0])).toEqual(["log_c"]);
    expect((await page({ action: "secrets.read", outcome: "failure" })).map((r) => r[0])).toEqual([
      "log_a",
    ]);
    // Still append-only after the rebuild: the triggers came back with the table.
    await expect(db.update(auditLog).set({ targetId: "x" })).rejects.toThrow();
  } finally {
    close();
  }
});
