/**
 * A shard's queue (worker/runs/shard.ts): queued runs go to the runtime host oldest first, at
 * most `window` hand-overs open at once; a full queue refuses a run with 429 and writes
 * nothing; a run still queued after its queue_timeout fails and that failure is delivered; the
 * shard goes on handing runs over after a pause or a restart, without spinning its alarm.
 * The host, the runs index and the webhook receivers are fetchMock's (test-support.ts).
 */
import { runDurableObjectAlarm } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { MAX_QUEUED_RUNS, SHARDS } from "./limits.ts";

import {
  APP_ID,
  accept,
  alarmOf,
  busy,
  deliveryEnded,
  ended,
  fakeHost,
  fillQueue,
  Gate,
  HOOKS,
  LIMITS,
  newApp,
  newRun,
  receiver,
  reportsOf,
  restart,
  shardNamed,
  sleep,
  sql,
  started,
  startFakes,
  statusIs,
  until,
  viewOf,
} from "./test-support.ts";
import type { NewRun } from "./types.ts";

beforeAll(startFakes);

describe("dispatch", () => {
  it("hands queued runs to the host oldest first (created_at, then id), whatever their arrival order", async () => {
    const app = newApp();
    const first = newRun(app);
    const held = new Gate();
    const host = fakeHost(app, (h) =>
      h.runId === first.runId ? { ...started(), hold: held } : started(),
    );
    const capacity1 = { limits: { capacity: 1 } };
    await accept(first, capacity1);
    await until("the first hand-over", () => host.handOvers.length === 1);
    // Accepted in another order than they were created; b and c share a creation time.
    const t = Date.now();
    const [a, b, c, d] = [t - 3000, t - 2000, t - 2000, t - 1000].map((createdAt) =>
      newRun(app, { createdAt }),
    ) as [NewRun, NewRun, NewRun, NewRun];
    for (const run of [d, b, a, c]) expect(await accept(run, capacity1)).toBeUndefined();
    await sleep(50);
    expect(host.handOvers).toHaveLength(1); // capacity 1: a window of one hand-over
    held.open();
    await until("every run handed over", () => host.handOvers.length === 5);
    const tied = [b.runId, c.runId].sort();
    expect(host.order()).toEqual([first.runId, a.runId, ...tied, d.runId]);
    expect(host.maxOpen).toBe(1);
  });

  it.each([
    [1, 1],
    [3, 2],
    [8, 3],
  ])(
    "capacity %i: at most %i hand-overs open at once, and all of them used",
    async (capacity, window) => {
      const app = newApp();
      // Held until all eight are accepted, however slowly the machine accepts them.
      const held = new Gate();
      const host = fakeHost(app, () => ({ ...ended(), hold: held }));
      const runs = Array.from({ length: 8 }, () => newRun(app));
      for (const run of runs) await accept(run, { limits: { capacity } });
      await until("a whole window handed over", () => host.handOvers.length === window);
      held.open();
      for (const run of runs) await statusIs(run, "success");
      expect(host.maxOpen).toBe(window);
      expect(host.handOvers).toHaveLength(runs.length); // each run handed over once
    },
  );

  it("once a pause is over, sets its alarm for the next deadline, not again and again for now", async () => {
    const app = newApp();
    const held = new Gate();
    const host = fakeHost(app, () =>
      host.handOvers.length === 1 ? busy : { ...started(), hold: held },
    );
    const [a, b] = [newRun(app), newRun(app)];
    await accept(a, { limits: { capacity: 1 } });
    await accept(b, { limits: { capacity: 1 } });
    // One is refused as busy; after the pause the oldest is handed over and held, and the
    // other waits in the shard.
    await until("a hand-over after the pause", () => host.handOvers.length === 2, 2_000);
    // Nothing is due before the runs expire in 10 minutes; the next hand-over comes with the
    // host's answer. The pause's own alarm may still fire late on a loaded machine (a CI run
    // sampled it 161 ms past due): first the alarm moves on, then it stays away. Samples of the
    // alarm, in ms from now (null: none set, or running).
    const ahead = async () => {
      const at = await alarmOf(shardNamed(app));
      return at === null || at - Date.now() >= 1_000 ? true : undefined;
    };
    await until("the alarm set past the pause", ahead, 2_000);
    const samples: Array<number | null> = [];
    for (let i = 0; i < 5; i++) {
      const at = await alarmOf(shardNamed(app));
      samples.push(at === null ? null : at - Date.now());
      await sleep(40);
    }
    expect(samples.filter((ms) => ms === null || ms < 1_000)).toEqual([]);
    held.open();
    await statusIs(b, "running");
  });

  it("after a restart of its shard, hands a queued run over again before it would expire", async () => {
    const app = newApp();
    const held = new Gate();
    const host = fakeHost(app, () =>
      host.handOvers.length === 1 ? { ...started(), hold: held } : started(),
    );
    const run = newRun(app);
    await accept(run);
    await until("the hand-over", () => host.count(run) === 1);
    // An eviction or a deploy resets the object: the open hand-over is gone with it.
    const shard = await restart(app);
    const expiresAt = run.createdAt + LIMITS.queueTimeout * 1000;
    const alarm = await alarmOf(shard);
    held.open();
    expect(alarm).toBeLessThan(expiresAt); // something must bring the shard back before
    await runDurableObjectAlarm(shard);
    await until("the run handed over again", () => host.count(run) === 2);
    await statusIs(run, "running");
  });
});

describe("a full queue", () => {
  it("refuses a run with 429 once the shard holds its share of 100,000 queued runs, writing nothing", async () => {
    const app = newApp();
    fakeHost(app, () => busy);
    const share = Math.ceil(MAX_QUEUED_RUNS / SHARDS);
    const oldest = newRun(app);
    expect(await accept(oldest)).toBeUndefined();
    const shard = await fillQueue(app, 0, share - 1);
    const refused = newRun(app);
    expect(await accept(refused)).toEqual({
      refused: {
        status: 429,
        message: `app '${app}' has too many runs waiting (about 100,000): try again once some have run`,
      },
    });
    expect(await sql(shard, "SELECT count(*) AS n FROM runs")).toEqual([{ n: share }]);
    expect(await viewOf(refused)).toBeNull();
    // Room again once a run left the queue.
    expect(await shard.cancel(oldest.runId, APP_ID)).toMatchObject({ status: "cancelled" });
    expect(await accept(refused)).toBeUndefined();
    expect(await viewOf(refused)).toMatchObject({ status: "queued" });
  });
});

describe("queue_timeout", () => {
  it("fails a run still queued after its queue_timeout, delivers and reports that, and never hands it over again", async () => {
    const app = newApp();
    const host = fakeHost(app, () => busy);
    const run = newRun(app);
    const got = receiver(`/${run.runId}`, [200]);
    const webhook = { url: `${HOOKS}/${run.runId}` };
    // 3 s: long enough for it to be seen queued first on a loaded machine.
    await accept(run, { limits: { queueTimeout: 3 }, webhook });
    await until("a first hand-over", () => host.count(run) > 0);
    expect(await viewOf(run)).toMatchObject({ status: "queued", finished_at: null });
    const view = await deliveryEnded(run, 10_000);
    const message =
      "expired in the queue: no replica was free within the app's queue_timeout (3 s)";
    expect(view).toMatchObject({
      status: "failure",
      started_at: null,
      error: { message },
      webhook: { state: "delivered" },
    });
    expect(Date.parse(view.finished_at ?? "")).toBeGreaterThanOrEqual(run.createdAt + 3000);
    expect(JSON.parse(got[0]?.body ?? "{}")).toEqual({
      run_id: run.runId,
      status: "failure",
      error: { message },
      run_time_ms: null,
      timestamp: view.finished_at,
    });
    expect(await reportsOf(run, 2)).toEqual(["queued", "failure"]);
    const handOvers = host.count(run);
    await sleep(600);
    expect(host.count(run)).toBe(handOvers);
  });

  it("fails a run whose hand-over the host still holds at its queue_timeout; the host's late answer changes nothing", async () => {
    const app = newApp();
    const held = new Gate();
    fakeHost(app, () => ({ ...started(), hold: held }));
    const run = newRun(app);
    await accept(run, { limits: { queueTimeout: 1 } });
    const view = await statusIs(run, "failure", 3_000);
    expect(view.error?.message).toMatch(/^expired in the queue/);
    held.open(); // the host answers 202 started, too late
    await sleep(100);
    expect(await viewOf(run)).toMatchObject({ status: "failure", started_at: null });
  });
});
