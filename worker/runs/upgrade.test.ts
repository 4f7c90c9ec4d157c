/**
 * A shard whose tables an earlier version of Runlet made, as a `git pull` leaves them (the local
 * run store is kept in RUNLET_HOME/wrangler): it opens, serves the runs it holds, and takes new
 * runs and keys. The tables below are as those versions wrote them. Before, such a shard failed
 * every call (no such column: indexed, or answer_kept), and its queued runs never ran.
 */
import { beforeAll, expect, it } from "vitest";
import {
  accept,
  ended,
  fakeHost,
  newApp,
  newRun,
  ORIGIN,
  PROJECT,
  restart,
  shardNamed,
  sql,
  startFakes,
  statusIs,
  viewOf,
} from "./test-support.ts";

beforeAll(startFakes);

/** The runs table of the first shards, before `indexed` and every column added since. */
const FIRST_RUNS_TABLE = `
CREATE TABLE runs (
  id TEXT PRIMARY KEY, project TEXT NOT NULL, app TEXT NOT NULL, fn TEXT NOT NULL,
  async INTEGER NOT NULL, status TEXT NOT NULL, created_at INTEGER NOT NULL, started_at INTEGER,
  finished_at INTEGER, deadline_at INTEGER, expires_at INTEGER, run_time_ms REAL, error TEXT,
  payload BLOB, request TEXT, host_misses INTEGER NOT NULL DEFAULT 0, hook_target TEXT,
  hook_signed INTEGER, hook_state TEXT, hook_attempts TEXT, hook_url TEXT, hook_secret TEXT,
  hook_body TEXT, due_at INTEGER
);
CREATE INDEX runs_queue ON runs (created_at, id) WHERE status = 'queued';
CREATE INDEX runs_due ON runs (due_at) WHERE due_at IS NOT NULL;`;

/** The first idempotency keys: an answer's parts counted, and kept in a table of their own. */
const FIRST_KEYS_TABLES = `
CREATE TABLE idempotency_keys (
  key_hash TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, run_id TEXT NOT NULL,
  async INTEGER NOT NULL, expires_at INTEGER NOT NULL, lease_until INTEGER,
  answer_status INTEGER, answer_headers TEXT, answer_parts INTEGER
);
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);
CREATE TABLE idempotency_answers (
  key_hash TEXT NOT NULL, part INTEGER NOT NULL, bytes BLOB NOT NULL,
  PRIMARY KEY (key_hash, part)
);`;

const bytes = (text: string) => new TextEncoder().encode(text).buffer as ArrayBuffer;

it("a shard from before `indexed` opens: its ended run reads, its queued run runs, new runs come", async () => {
  const app = newApp();
  fakeHost(app, () => ended());
  const done = newRun(app, { createdAt: Date.now() - 60_000 });
  const waiting = newRun(app, { createdAt: Date.now() - 30_000 });
  const shard = shardNamed(app, 0);
  await sql(shard, "DROP TABLE runs");
  await sql(shard, FIRST_RUNS_TABLE);
  await sql(
    shard,
    `INSERT INTO runs (id, project, app, fn, async, status, created_at, started_at, finished_at,
       run_time_ms, due_at) VALUES (?, ?, ?, 'run', 1, 'success', ?, ?, ?, 2.5, ?)`,
    done.runId,
    PROJECT,
    app,
    done.createdAt,
    done.createdAt,
    done.createdAt + 3,
    Date.now() + 600_000,
  );
  await sql(
    shard,
    `INSERT INTO runs (id, project, app, fn, async, status, created_at, expires_at, payload,
       due_at) VALUES (?, ?, ?, 'run', 1, 'queued', ?, ?, ?, ?)`,
    waiting.runId,
    PROJECT,
    app,
    waiting.createdAt,
    Date.now() + 600_000,
    bytes("{}"),
    Date.now() + 600_000,
  );
  await sql(
    shard,
    "INSERT INTO shard (key, project, app, origin, capacity) VALUES (1, ?, ?, ?, 4)",
    PROJECT,
    app,
    ORIGIN,
  );

  const upgraded = await restart(app, 0); // as `runlet start` of the new version does
  expect((await viewOf(done))?.status).toBe("success");
  await upgraded.wake(ORIGIN);
  await statusIs(waiting, "success");
  const next = newRun(app);
  expect(await accept(next)).toBeUndefined();
  await statusIs(next, "success");
});

it("a shard with the first idempotency keys opens: a key is taken, its answer kept and replayed", async () => {
  const app = newApp();
  const shard = shardNamed(app, 0);
  await sql(shard, "DROP TABLE idempotency_keys");
  await sql(shard, FIRST_KEYS_TABLES);
  // A key of then, its answer in two parts (hashed without the app's id: no call finds it now).
  await sql(
    shard,
    `INSERT INTO idempotency_keys (key_hash, fingerprint, run_id, async, expires_at,
       answer_status, answer_headers, answer_parts) VALUES ('old', 'fp', ?, 0, ?, 200, '{}', 2)`,
    newRun(app).runId,
    Date.now() + 3_600_000,
  );
  for (const part of [0, 1])
    await sql(
      shard,
      "INSERT INTO idempotency_answers (key_hash, part, bytes) VALUES ('old', ?, ?)",
      part,
      bytes(`part ${part}`),
    );

  const upgraded = await restart(app, 0);
  const key = { hash: "new", fingerprint: "fp", ttlMs: 86_400_000 };
  const run = newRun(app);
  expect(await upgraded.claim(key, run.runId)).toBeUndefined();
  await upgraded.keep("new", run.runId, { status: 201, headers: {}, body: bytes("answer") });
  const replay = await upgraded.claim(key, newRun(app).runId);
  expect(replay && "replayOf" in replay && replay.replayOf).toBe(run.runId);
  const answer = replay && "answer" in replay ? replay.answer : undefined;
  expect(answer?.status).toBe(201);
  expect(new TextDecoder().decode(answer?.body ?? undefined)).toBe("answer");
  const tables = await sql(upgraded, "SELECT name FROM sqlite_master WHERE type = 'table'");
  expect(tables.map((t) => t.name)).not.toContain("idempotency_answers");
});
