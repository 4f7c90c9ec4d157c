import { execFile } from "node:child_process";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { createClient } from "@libsql/client";
import { afterAll, expect, it } from "vitest";

// The migrations drizzle-kit writes are the ones `wrangler d1 migrations apply` uses for the
// control plane on Workers (wrangler.toml, env "control-plane"): applied here to a local D1.
const run = promisify(execFile);
const ROOT = new URL("..", import.meta.url).pathname;
const WRANGLER = join(ROOT, "node_modules/wrangler/bin/wrangler.js");
const dir = await mkdtemp(join(tmpdir(), "runlet-d1-"));

afterAll(() => rm(dir, { recursive: true, force: true }));

const wrangler = (...args: string[]) =>
  run(
    process.execPath,
    [WRANGLER, ...args, "--env", "control-plane", "--local", "--persist-to", dir],
    {
      cwd: ROOT,
      env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "1" },
      timeout: 120_000,
    },
  );

it("applies with wrangler d1 migrations apply, triggers and audit indexes included", async () => {
  const applied = await wrangler("d1", "migrations", "apply", "runlet-control-plane");
  expect(applied.stdout).toMatch(/0003_audit_integer_keys\.sql/);
  // The local D1 is a SQLite file under the persist folder: read as it is, without a second
  // wrangler command (each was 5 to 13 s of a busy two-core machine).
  const db = createClient({ url: `file:${await localDatabase(dir)}` });
  try {
    const { rows } = await db.execute(
      "SELECT type, name FROM sqlite_master WHERE tbl_name = 'audit_log' AND type IN ('trigger', 'index') ORDER BY name",
    );
    const names = rows.map((r) => ({ type: String(r.type), name: String(r.name) }));
    expect(names.filter((r) => r.type === "trigger").map((r) => r.name)).toEqual([
      "audit_log_delete_only_expired",
      "audit_log_no_update",
    ]);
    expect(names.filter((r) => r.type === "index").map((r) => r.name)).toEqual([
      "audit_action",
      "audit_action_actor",
      "audit_actor",
      "audit_time",
    ]);
  } finally {
    db.close();
  }
  // A guard against a hang, not a speed check: wrangler applies through a local workerd.
}, 180_000);

/** The one SQLite database wrangler made under `persist` (its D1 objects' folder). */
async function localDatabase(persist: string): Promise<string> {
  const files = (await readdir(persist, { recursive: true })).filter(
    (f) => f.endsWith(".sqlite") && f.includes("D1DatabaseObject"),
  );
  expect(files).toHaveLength(1);
  return join(persist, files[0] as string);
}
