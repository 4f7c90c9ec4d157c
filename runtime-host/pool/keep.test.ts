// A host told by its heartbeat's answer to keep fewer replicas of an app (docs/hosts.md,
// "Replicas over all hosts": it was down, and other hosts were granted its share): the pool
// retires the rest, idle ones at once and busy ones once their calls end, below min_replicas
// too, and its heartbeat then counts only what it keeps. On in-memory replicas.
import { afterEach, describe, expect, it, vi } from "vitest";
import { heartbeatOf } from "../load.ts";
import { ReplicaGrants } from "./grants.ts";
import { type PoolTarget, ReplicaPool } from "./pool.ts";
import { FakeReplica, fakeTarget } from "./test-support.ts";

let pool: ReplicaPool | undefined;
afterEach(async () => {
  await pool?.close();
  pool = undefined;
});

function setUp(scaling: Record<string, number>) {
  const started: FakeReplica[] = [];
  /**
   * What the control plane answers a grant request: yes while `granting`; `elsewhere`, whether
   * other hosts hold some of the app's places. `had`: each request's `have`.
   */
  const controlPlane = { granting: true, elsewhere: true, had: [] as number[] };
  const grants = new ReplicaGrants(async (_, have) => {
    controlPlane.had.push(have);
    return { granted: controlPlane.granting, elsewhere: controlPlane.elsewhere };
  });
  pool = new ReplicaPool(
    (target) => {
      const replica = new FakeReplica(target);
      started.push(replica);
      return replica;
    },
    { queueWaitMs: 5_000, maxWaiting: 100, grants, finishingWaitMs: 1_000 },
  );
  const target = fakeTarget(scaling);
  const p = pool;
  /** A call that holds its replica's slot until `end()`; `pid` says which replica it has. */
  const hold = (to: PoolTarget = target) => {
    let end: () => void = () => {};
    const ended = new Promise<void>((resolve) => {
      end = resolve;
    });
    let pid: number | undefined;
    const done = p.use(to, async (workload) => {
      pid = workload.pid;
      await ended;
    });
    return { end, done, pid: () => pid };
  };
  const replicas = () => p.stats()[0]?.replicas ?? [];
  const counted = () => heartbeatOf(p.stats(), true).apps[0]?.replicas ?? 0;
  return { pool: p, target, grants, started, controlPlane, hold, replicas, counted };
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 20));

describe("a host told to keep fewer replicas of an app", () => {
  it("retires the rest, idle ones first at once, busy ones once their call ends", async () => {
    const { pool, started, controlPlane, hold, replicas, counted } = setUp({ max_replicas: 3 });
    const calls = [hold(), hold(), hold()];
    await settle();
    expect(started).toHaveLength(3);
    calls[0]?.end(); // its replica is idle now; the other two are busy
    await calls[0]?.done;
    expect(counted()).toBe(3);
    const idle = calls[0]?.pid();

    controlPlane.granting = false; // the app's other replicas run on another host now
    pool.keepAtMost("p", "a", 1);
    await settle();
    // The idle one stopped at once; of the busy ones, one finishes its call, then stops.
    expect(started.find((r) => r.pid === idle)?.exited).toBe(true);
    expect(replicas().map((r) => r.active)).toEqual([1, 1]);
    expect(started.filter((r) => !r.exited)).toHaveLength(2);
    calls[1]?.end();
    calls[2]?.end();
    await Promise.all([calls[1]?.done, calls[2]?.done]);
    await settle();
    expect(started.filter((r) => !r.exited)).toHaveLength(1);
    expect(counted()).toBe(1);
    // The one kept takes the next call; no other replica starts.
    const next = hold();
    await settle();
    expect(started.filter((r) => !r.exited).map((r) => r.pid)).toEqual([next.pid()]);
    expect(started).toHaveLength(3);
    next.end();
    await next.done;
  });

  it("retires no more when told the same again while the retired ones finish", async () => {
    const { pool, started, controlPlane, hold } = setUp({ max_replicas: 3 });
    const calls = [hold(), hold(), hold()];
    await settle();
    controlPlane.granting = false;
    pool.keepAtMost("p", "a", 1); // two retire, busy: they finish their calls first
    await settle();
    pool.keepAtMost("p", "a", 1); // the next heartbeat's answer, while they still do
    await settle();
    for (const call of calls) call.end();
    await Promise.all(calls.map((c) => c.done));
    await settle();
    expect(started.filter((r) => !r.exited)).toHaveLength(1); // it had been none
  });

  it("goes below min_replicas, and starts none to make up for them", async () => {
    const { pool, target, started, controlPlane, replicas, counted } = setUp({
      max_replicas: 3,
      min_replicas: 2,
    });
    pool.deployed(target);
    await settle();
    expect(replicas()).toHaveLength(2);
    controlPlane.granting = false;
    pool.keepAtMost("p", "a", 0);
    await settle();
    expect(started.every((r) => r.exited)).toBe(true);
    expect(started).toHaveLength(2);
    expect(counted()).toBe(0);
  });

  it("keeps what it has, grants held included, when that is within what it may keep", async () => {
    const { pool, target, grants, started, hold, counted } = setUp({ max_replicas: 4 });
    const calls = [hold(), hold()];
    await settle();
    grants.request(target, 2, () => {}); // granted, held for a replica not started yet
    await settle();
    pool.keepAtMost("p", "a", 3);
    pool.keepAtMost("p", "a", 4);
    await settle();
    expect(started.filter((r) => !r.exited)).toHaveLength(2);
    expect(counted()).toBe(3);
    // Told to keep two: the grant held goes, the two replicas stay.
    pool.keepAtMost("p", "a", 2);
    await settle();
    expect(started.filter((r) => !r.exited)).toHaveLength(2);
    expect(counted()).toBe(2);
    for (const call of calls) call.end();
    await Promise.all(calls.map((c) => c.done));
  });
});

describe("a host asking for a grant", () => {
  it("counts the retired replicas still finishing calls among those it has", async () => {
    const { pool, target, controlPlane, hold } = setUp({ max_replicas: 2 });
    const busy = hold();
    await settle();
    expect(controlPlane.had).toEqual([0]);
    // A redeploy: the busy replica of version 1 finishes its call; the next call needs a new one.
    const v2 = { ...target, version: 2, digest: "2" };
    pool.deployed(v2);
    const next = hold(v2);
    await settle();
    expect(controlPlane.had).toEqual([0, 1]);
    busy.end();
    next.end();
    await Promise.all([busy.done, next.done]);
  });

  it("keeps its calls waiting while its own retired replicas finish, when the grant is refused", async () => {
    const { pool, target, started, controlPlane, hold } = setUp({ max_replicas: 2 });
    const old = [hold(), hold()];
    await settle();
    // A redeploy with the app at its maximum: both replicas here are retired, still busy.
    const v2 = { ...target, version: 2, digest: "2" };
    pool.deployed(v2);
    const next = hold(v2);
    await settle();
    // One ends; the grant for its place is refused (another host took one meanwhile). Before,
    // having no replica of v2, the host refused its waiting call at once (429 "on other hosts"),
    // and the other host, whose replica was retired too, did the same: the caller got 429
    // during every redeploy at full capacity over two hosts.
    controlPlane.granting = false;
    old[0]?.end();
    await old[0]?.done;
    await settle();
    let refused: unknown;
    next.done.catch((err: unknown) => {
      refused = err;
    });
    await settle();
    expect(refused).toBeUndefined();
    // The other one ends, and its place is granted: the call runs on a replica of v2.
    controlPlane.granting = true;
    old[1]?.end();
    await old[1]?.done;
    await settle();
    expect(refused).toBeUndefined();
    expect(started.find((r) => r.pid === next.pid())?.spec.version).toBe(2);
    next.end();
    await next.done;
  });

  it("sends its calls elsewhere when its only replicas are retired ones serving long calls", async () => {
    const { pool, target, started, controlPlane, hold } = setUp({ max_replicas: 2 });
    const stream = hold(); // a long stream on version 1
    await settle();
    // A redeploy: the streaming replica is retired. Another host was granted the app's other
    // place and runs version 2 there: this host's grant is refused.
    const v2 = { ...target, version: 2, digest: "2" };
    pool.deployed(v2);
    controlPlane.granting = false;
    const sync = hold(v2);
    const asyncRun = pool.use(v2, async () => "ran here", {
      waitMs: Number.POSITIVE_INFINITY,
      order: 1,
    });
    // Both leave as 'elsewhere' (the Worker sends them to the other host). Before, the sync call
    // waited its whole queue wait (30 s on a host) for the stream to end, then was refused 429
    // as busy here, and the async run waited as long as the stream lasted.
    for (const call of [sync.done, asyncRun]) {
      const err = await call.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toMatchObject({ failure: { kind: "busy", elsewhere: true } });
    }
    expect(started.map((r) => r.exited)).toEqual([false]); // the stream goes on
    stream.end();
    await stream.done;
  });

  it("keeps the calls waiting, asking again, where no other host holds the app's places", async () => {
    const { pool, target, started, controlPlane, hold } = setUp({ max_replicas: 2 });
    const long = hold(); // a long call on version 1, on the only host
    await settle();
    const v2 = { ...target, version: 2, digest: "2" };
    pool.deployed(v2);
    // Refused though this host has room: the control plane's count lags (a replica stopped a
    // moment ago still counts), and no other host has any of the app's places.
    controlPlane.granting = false;
    controlPlane.elsewhere = false;
    const next = hold(v2);
    let left: unknown;
    next.done.catch((err: unknown) => {
      left = err;
    });
    // Past the 1 s this pool gives retired replicas where there is an elsewhere: the call was
    // sent 'elsewhere', to no other host (429 from the Worker). It waits, and asks again.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(left).toBeUndefined();
    controlPlane.granting = true; // the count caught up
    await vi.waitFor(() => expect(next.pid()).toBeDefined(), { timeout: 5_000 });
    expect(started.map((r) => r.spec.version)).toEqual([1, 2]);
    next.end();
    long.end();
    await Promise.all([next.done, long.done]);
  });

  it("asks again for a refused grant while calls wait behind a busy replica here", async () => {
    const { started, controlPlane, hold } = setUp({ max_replicas: 2 });
    const stream = hold(); // a long stream on this host's one replica
    await settle();
    // Refused: another host's replica, stopped a moment ago, still counts until its heartbeat.
    controlPlane.granting = false;
    const next = hold();
    await settle();
    controlPlane.granting = true; // that heartbeat came
    // The call runs on a second replica here. Before, the refusal stood until the stream's
    // replica freed its slot: the call waited for the stream, or was refused after its wait.
    next.end();
    await next.done;
    expect(started).toHaveLength(2);
    expect(next.pid()).toBe(started[1]?.pid);
    expect(controlPlane.had).toEqual([0, 1, 1]); // the first replica, the refusal, the grant
    stream.end();
    await stream.done;
  });
});
