// runlet backup copies a home whose databases are open and written, with their latest rows still
// in the -wal only, as a cp -a of a running home cannot be trusted to (docs/deploy.md).
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Client, createClient } from "@libsql/client";
import { afterAll, describe, expect, it } from "vitest";
import { backupHome } from "./backup.ts";

const root = mkdtempSync(join(tmpdir(), "runlet-backup-"));
const open: Client[] = [];
afterAll(() => {
  for (const c of open) c.close();
  rmSync(root, { recursive: true, force: true });
});

/** A WAL database held open by a writer that never checkpoints, as a running component's is. */
async function liveDb(path: string, rows: number): Promise<void> {
  const db = createClient({ url: `file:${path}` });
  open.push(db);
  await db.execute("PRAGMA journal_mode = WAL");
  await db.execute("PRAGMA wal_autocheckpoint = 0");
  await db.execute("CREATE TABLE t (v TEXT)");
  for (let i = 0; i < rows; i++)
    await db.execute({ sql: "INSERT INTO t VALUES (?)", args: [`r${i}`] });
}

async function rowsOf(path: string): Promise<number> {
  const db = createClient({ url: `file:${path}` });
  try {
    return Number((await db.execute("SELECT count(*) AS n FROM t")).rows[0]?.n);
  } finally {
    db.close();
  }
}

describe("runlet backup", () => {
  it("copies every database whole while it is open, the keys as they are, and leaves out logs and the pid file", async () => {
    const home = join(root, "home");
    const shards = join(home, "wrangler", "v3", "do", "runlet-RunShard");
    mkdirSync(shards, { recursive: true });
    mkdirSync(join(home, "keys"), { mode: 0o700 });
    mkdirSync(join(home, "logs"));
    writeFileSync(join(home, "keys", "master.key"), "k\n", { mode: 0o600 });
    writeFileSync(join(home, "runlet.pid"), "1\n");
    writeFileSync(join(home, "logs", "worker.log"), "x\n");
    await liveDb(join(home, "runlet.db"), 50);
    await liveDb(join(shards, "abc.sqlite"), 7);

    const done = await backupHome(home, join(root, "copy"));
    expect(done).toMatchObject({ databases: 2, files: 1 });
    const copy = join(root, "copy");
    expect(await rowsOf(join(copy, "runlet.db"))).toBe(50);
    expect(await rowsOf(join(copy, "wrangler", "v3", "do", "runlet-RunShard", "abc.sqlite"))).toBe(
      7,
    );
    expect(statSync(join(copy, "keys", "master.key")).mode & 0o777).toBe(0o600);
    expect(readdirSync(copy).sort()).toEqual(["keys", "runlet.db", "wrangler"]);
  });

  it("refuses a folder that exists or lies inside the home, and leaves nothing behind", async () => {
    const home = join(root, "home2");
    mkdirSync(home);
    await liveDb(join(home, "runlet.db"), 1);
    await expect(backupHome(home, join(home, "inside"))).rejects.toThrow(/inside RUNLET_HOME/);
    mkdirSync(join(root, "taken"));
    await expect(backupHome(home, join(root, "taken"))).rejects.toThrow(/exists already/);
    expect(readdirSync(root).filter((n) => n.endsWith(".partial"))).toEqual([]);
  });
});
