// runlet backup copies a home whose databases are open and written, with their latest rows still
// in the -wal only, as a cp -a of a running home cannot be trusted to (docs/deploy.md).
import {
  appendFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Client, createClient } from "@libsql/client";
import { afterAll, describe, expect, it } from "vitest";
import { RunLogStore } from "../../runtime-host/pool/run-logs.ts";
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

  it("copies the runtime host's logs of runs, readable from the copy, and leaves out its copies of apps and spare folders", async () => {
    const home = join(root, "home3");
    mkdirSync(home);
    await liveDb(join(home, "runlet.db"), 1);
    const logs = join(home, "host", "run-logs");
    const store = await RunLogStore.open(logs); // a running host's store, as it makes its files
    const owner = { project: "prj_1", app: "logger" };
    for (const runId of ["run_old", "run_new"]) {
      store.open(runId, owner);
      store.write(runId, "stdout", `${runId} one\n${runId} two\n`);
    }
    await store.close();
    // The older run's file was written first: the copy's host drops it first.
    utimesSync(join(logs, "run_old.jsonl"), 1_000, 1_000);
    // A file copied in the middle of an append ends in a line cut short.
    appendFileSync(join(logs, "run_new.jsonl"), '{"n":3,"at":1,"s":"o","t":"cut sh');
    mkdirSync(join(home, "host", "apps", "prj_1", "logger", "v1"), { recursive: true });
    writeFileSync(join(home, "host", "apps", "prj_1", "logger", "v1", "main.mjs"), "//\n");
    mkdirSync(join(home, "host", "slots", "managed", "0"), { recursive: true });

    const copy = join(root, "copy3");
    expect(await backupHome(home, copy)).toMatchObject({ databases: 1, files: 2 });
    expect(readdirSync(join(copy, "host"))).toEqual(["run-logs"]);
    const copied = join(copy, "host", "run-logs");
    expect(statSync(copied).mode & 0o777).toBe(0o700);
    expect(statSync(join(copied, "run_new.jsonl")).mode & 0o777).toBe(0o600);
    expect(statSync(join(copied, "run_old.jsonl")).mtimeMs).toBe(1_000_000);

    // The copy's host: every whole line, numbered as before; the line cut short left out.
    const restored = await RunLogStore.open(copied);
    const texts = async (runId: string) =>
      (await restored.read(runId))?.lines.map((l) => `${l.seq}:${l.text}`);
    expect(await texts("run_new")).toEqual(["1:run_new one", "2:run_new two"]);
    expect(await texts("run_old")).toEqual(["1:run_old one", "2:run_old two"]);
    await restored.close();
    // Allowed one run, it keeps the newest: the times came with the files.
    const one = await RunLogStore.open(copied, { bytesPerRun: 1024, runs: 1 });
    await one.close();
    expect(readdirSync(copied)).toEqual(["run_new.jsonl"]);
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
