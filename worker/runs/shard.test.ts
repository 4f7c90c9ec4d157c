/**
 * The run store's shards as a whole (worker/runs/shards.ts, shard.ts, store.ts): a run id names
 * its shard and the run lands there; an unknown id writes nothing; one alarm per shard serves
 * every deadline of every run in it, soonest first; ended rows go after 7 days, in batches.
 * Queue, hand-over, cancel, watchdog and deliveries have files of their own.
 */
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { RUN_ID_SOURCE as RUN_ID, timeOfId } from "../../common/ids.ts";
import { SHARDS } from "./limits.ts";
import { newRunId, shardOf } from "./shards.ts";
import { RETAIN_MS } from "./store.ts";
import {
  APP_ID,
  accept,
  alarmOf,
  deliveryEnded,
  ended,
  fakeHost,
  Gate,
  HOOKS,
  hostRunStates,
  newApp,
  newRun,
  ORIGIN,
  PROJECT,
  receiver,
  rowOf,
  type Shard,
  shardNamed,
  shardOfRun,
  sql,
  started,
  startFakes,
  statusIs,
  until,
  viewOf,
} from "./test-support.ts";
import type { NewRun } from "./types.ts";

beforeAll(startFakes);

describe("run ids and shards", () => {
  it("newRunId() makes run ids (sortable by time) whose last character names one of the shards", () => {
    const ids = Array.from({ length: 400 }, () => newRunId());
    for (const id of ids) {
      expect(id).toMatch(new RegExp(`^${RUN_ID}$`));
      expect(shardOf(id)).toBeGreaterThanOrEqual(0);
      expect(shardOf(id)).toBeLessThan(SHARDS);
      expect(Math.abs((timeOfId(id) ?? 0) - Date.now())).toBeLessThan(5_000);
    }
    expect(new Set(ids.map(shardOf)).size).toBe(SHARDS); // all of them used
  });

  it("a run lands in the shard its id names, which records whose runs it holds", async () => {
    const app = newApp();
    fakeHost(app, () => ended());
    const runs = Array.from({ length: SHARDS }, (_, k) => newRun(app, { k }));
    for (const run of runs) expect(await accept(run, { limits: { capacity: 8 } })).toBeUndefined();
    for (const [k, run] of runs.entries()) {
      const shard = shardNamed(app, k);
      expect(await sql(shard, "SELECT id FROM runs")).toEqual([{ id: run.runId }]);
      expect(await sql(shard, "SELECT project, app, origin, capacity FROM shard")).toEqual([
        { project: PROJECT, app, origin: ORIGIN, capacity: 8 },
      ]);
    }
  });

  it("an unknown id on an existing shard: view, cancel and report answer null and write nothing", async () => {
    const app = newApp();
    fakeHost(app, () => ended());
    const run = newRun(app);
    await accept(run);
    await statusIs(run, "success");
    const shard = shardOfRun(run);
    const facts = () =>
      runInDurableObject(shard, (_, state) => ({
        rows: state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM runs").one().n,
        bytes: state.storage.sql.databaseSize,
      }));
    const before = await facts();
    const unknown = newRun(app).runId;
    expect(await shard.view(unknown)).toBeNull();
    expect(await shard.cancel(unknown, APP_ID)).toBeNull();
    expect(await shard.report(unknown, { status: "success", result: 1 })).toBeNull();
    expect(await facts()).toEqual(before);
  });
});

describe("one alarm for every deadline of a shard", () => {
  it("is never set later than the soonest deadline, and handles each when it comes: expiries (one delivered), the watchdog, a hand-over", async () => {
    const app = newApp();
    const [running, holding, sync] = [1, 2, 3].map(() => newRun(app)) as [NewRun, NewRun, NewRun];
    const held = new Gate();
    const host = fakeHost(app, (h) =>
      h.runId === holding.runId ? { ...started(), hold: held } : started(),
    );
    const shard = shardNamed(app);
    const before = Date.now();
    // Capacity 1: once `holding` is held by the host, the others wait in the shard.
    await accept(running, { limits: { capacity: 1 } });
    await statusIs(running, "running");
    await accept(holding, { limits: { capacity: 1 } });
    await until("holding handed over", () => host.count(holding) === 1);
    receiver(`/${sync.runId}`, [200]);
    const outcome = { status: "success" as const, result: 1, run_time_ms: 1 };
    await shard.record(sync, outcome, { url: `${HOOKS}/${sync.runId}` });
    await deliveryEnded(sync);
    // Two runs that wait, made last. The runtime fires the alarm by itself when its time comes,
    // so their queue timeouts are far longer than the few calls before the test looks (with 1 s
    // and 2 s from the test's start, a loaded machine saw q1 expire before it looked); their
    // deadlines then come when the test says (the clock cannot be moved: see `deadlineNow`).
    const q1 = newRun(app);
    await accept(q1, { limits: { capacity: 1, queueTimeout: 10 } });
    const q2 = newRun(app);
    const got = receiver(`/${q2.runId}`, [200]);
    const webhook = { url: `${HOOKS}/${q2.runId}` };
    await accept(q2, { limits: { capacity: 1, queueTimeout: 15 }, webhook });

    // Expiry in 10 s and 15 s, a question to the host in 30 s, expiry in 10 min, removal in 7 days.
    expect(await dueOf(q1)).toBe(q1.createdAt + 10_000);
    expect(await dueOf(q2)).toBe(q2.createdAt + 15_000);
    expect(await dueOf(running)).toBeGreaterThanOrEqual(before + 30_000);
    expect(await dueOf(holding)).toBe(holding.createdAt + 600_000);
    expect(await dueOf(sync)).toBe(((await rowOf(sync))?.finished_at as number) + RETAIN_MS);
    // Never later than q1's expiry, the soonest (an alarm set earlier stays: a batch to the runs
    // index retried on a loaded machine; it finds nothing and moves on).
    expect(await alarmOf(shard)).toBeLessThanOrEqual(await dueOf(q1));
    await alarmNotLate(shard);

    await deadlineNow(shard, q1);
    expect(await statusIs(q1, "failure")).toMatchObject({
      error: {
        message: "expired in the queue: no replica was free within the app's queue_timeout (10 s)",
      },
    });
    expect(await viewOf(q2)).toMatchObject({ status: "queued" });
    expect(await alarmOf(shard)).toBeLessThanOrEqual(await dueOf(q2));
    await alarmNotLate(shard);

    await deadlineNow(shard, q2);
    expect(await deliveryEnded(q2)).toMatchObject({ status: "failure" });
    expect(JSON.parse(got[0]?.body ?? "{}")).toMatchObject({ status: "failure" });
    // The watchdog's next question is the soonest deadline left (or sooner: see above).
    expect(await alarmOf(shard)).toBeLessThanOrEqual(await dueOf(running));
    await alarmNotLate(shard);

    // That question made due now (wake) rather than waited for: the host says it ended.
    hostRunStates(running, [{ status: "success", result: 2, runTimeMs: 5 }]);
    const woke = Date.now();
    await shard.wake(ORIGIN);
    await runDurableObjectAlarm(shard);
    await statusIs(running, "success");
    // Next: `holding`'s expiry (or sooner, should the shard look at an open hand-over sooner),
    // not at once: nothing else is due.
    const next = (await alarmOf(shard)) as number;
    expect(next).toBeGreaterThan(woke + 1_000);
    expect(next).toBeLessThanOrEqual(await dueOf(holding));
    await alarmNotLate(shard);

    held.open(); // the host starts it: its first question is next (or sooner: an alarm set
    // earlier than needed is left alone, it finds nothing due and sets the next)
    const opened = Date.now();
    await statusIs(holding, "running");
    const first = (await alarmOf(shard)) as number;
    expect(first).toBeGreaterThan(woke + 20_000);
    expect(first).toBeLessThanOrEqual(await dueOf(holding));
    expect(await dueOf(holding)).toBeGreaterThanOrEqual(opened + 30_000);
    await alarmNotLate(shard);
  });
});

describe("retention", () => {
  it("keeps an ended run 7 days, then removes its row", async () => {
    const app = newApp();
    fakeHost(app, () => ended());
    const run = newRun(app);
    await accept(run);
    const view = await statusIs(run, "success");
    expect(await dueOf(run)).toBe(Date.parse(view.finished_at ?? "") + RETAIN_MS);
    const shard = shardOfRun(run);
    // The alarm is never later than the soonest deadline (it may be sooner: see #schedule).
    expect(await alarmOf(shard)).toBeLessThanOrEqual(await dueOf(run));
    await sql(shard, "UPDATE runs SET due_at = ? WHERE id = ?", Date.now() - 1, run.runId); // 7 days on
    expect(await runDurableObjectAlarm(shard)).toBe(true);
    expect(await viewOf(run)).toBeNull();
  });

  it("takes at most 500 due rows per alarm, and sets the next alarm at once for the rest", async () => {
    const app = newApp();
    const shard = shardNamed(app);
    const count = async () =>
      (await sql<{ n: number }>(shard, "SELECT count(*) AS n FROM runs"))[0]?.n;
    await sql(
      shard,
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 600)
       INSERT INTO runs (id, project, app, fn, async, status, created_at, finished_at, due_at)
       SELECT printf('run_old%019d', i), ?, ?, 'run', 1, 'success', 0, 0, ? FROM n`,
      PROJECT,
      app,
      Date.now() - 1_000,
    );
    await runInDurableObject(shard, (_, state) => state.storage.setAlarm(Date.now() + 60_000));
    expect(await runDurableObjectAlarm(shard)).toBe(true);
    expect([0, 100]).toContain(await count()); // 0: the next alarm came already
    await until("every row removed", async () => (await count()) === 0, 2_000);
  });
});

async function dueOf(run: NewRun): Promise<number> {
  return (await rowOf(run))?.due_at as number;
}

/**
 * `run`'s deadline comes now: its row is made due and the shard's alarm runs, as it would at
 * that time (the runtime's clock cannot be moved; a short real deadline passes by itself on a
 * loaded machine before the test has looked).
 */
async function deadlineNow(shard: Shard, run: NewRun): Promise<void> {
  await sql(shard, "UPDATE runs SET due_at = ? WHERE id = ?", Date.now() - 1, run.runId);
  expect(await runDurableObjectAlarm(shard)).toBe(true);
}

/** The shard's alarm is set, and not later than the soonest deadline of its rows (read at once). */
async function alarmNotLate(shard: Shard): Promise<void> {
  const { alarm, soonest } = await runInDurableObject(shard, async (_, state) => ({
    soonest: state.storage.sql
      .exec<{ at: number | null }>("SELECT min(due_at) AS at FROM runs")
      .one().at,
    alarm: await state.storage.getAlarm(),
  }));
  expect(alarm).not.toBeNull();
  expect(alarm).toBeLessThanOrEqual(soonest as number);
}
