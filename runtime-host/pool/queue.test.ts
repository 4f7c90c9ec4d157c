// The pool's wait queue, on real replica processes: whose turn a freed slot is (arrival order,
// async runs oldest first), withdrawn waiters, the bound on waiters, the wait limit, and that
// the app never runs more calls at once than its scaling allows. The app logs each call's start
// and end to a file; the order of those lines is the order things happened in.

import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { configOf, failureOf, newHome, removeHome } from "../test-support.ts";
import { type PoolTarget, ReplicaPool, type UseOptions } from "./pool.ts";
import { ManagedReplica } from "./replica.ts";

const APP = `
import { appendFileSync } from "node:fs";
export async function work({ id, ms, log }) {
  appendFileSync(log, "start " + id + "\\n");
  await new Promise((resolve) => setTimeout(resolve, ms));
  appendFileSync(log, "end " + id + "\\n");
  return id;
}`;

let home: string;
let log: string;
let pool: ReplicaPool | undefined;

beforeEach(async () => {
  home = await newHome();
  log = join(home, "calls.log");
  await writeFile(join(home, "main.mjs"), APP);
  await writeFile(log, "");
});

afterEach(async () => {
  await pool?.close();
  pool = undefined;
  await removeHome(home);
});

function poolOf(
  scaling: Record<string, number>,
  limits: { queueWaitMs?: number; maxWaiting?: number } = {},
  config: Record<string, unknown> = {},
) {
  pool = new ReplicaPool(
    // Its start bounded by the app's start_timeout, as the host's replicas are (server.ts).
    (target) =>
      new ManagedReplica(
        { ...target, startTimeout: target.config.start_timeout },
        { startTimeoutMs: 10_000, stopGraceMs: 500 },
      ),
    { queueWaitMs: 10_000, maxWaiting: 100, ...limits },
  );
  const target: PoolTarget = {
    project: "p",
    app: "a",
    version: 1,
    dir: home,
    digest: "1",
    config: configOf("a", { ...config, scaling: { cooldown: 60, ...scaling } }),
  };
  const run = (id: string, ms: number, options: UseOptions = {}) =>
    (pool as ReplicaPool)
      .call(target, { fn: "work", payload: { id, ms, log }, runId: id }, 10_000, options)
      .then(({ outcome }) => (outcome.kind === "returned" ? outcome.value : outcome.kind));
  return { pool, run };
}

/** `start`/`end` and the call's id, line by line. */
async function events(): Promise<string[][]> {
  const text = await readFile(log, "utf8");
  return text
    .split("\n")
    .filter(Boolean)
    .map((line) => line.split(" "));
}

const starts = async () => (await events()).filter(([e]) => e === "start").map(([, id]) => id);

/** The most calls that ran at once. */
async function mostAtOnce(): Promise<number> {
  let running = 0;
  let most = 0;
  for (const [event] of await events()) {
    running += event === "start" ? 1 : -1;
    most = Math.max(most, running);
  }
  return most;
}

it("gives a freed slot to the first to arrive, or if that is an async run, to the oldest async run", async () => {
  const { run } = poolOf({ max_replicas: 1, replica_concurrency: 1 });
  const hold = run("hold", 150);
  // They arrive in this order while the one slot is taken.
  const queued = [
    run("s1", 10),
    run("a30", 10, { order: 30, waitMs: Number.POSITIVE_INFINITY }),
    run("s2", 10),
    run("a10", 10, { order: 10, waitMs: Number.POSITIVE_INFINITY }),
    run("a20", 10, { order: 20, waitMs: Number.POSITIVE_INFINITY }),
  ];
  expect(await Promise.all([hold, ...queued])).toEqual(["hold", "s1", "a30", "s2", "a10", "a20"]);
  // s1 arrived first. Then a30's turn, which goes to the oldest async run: a10, then a20, then
  // a30 itself. s2 waited behind the async runs that arrived before it, and those only.
  expect(await starts()).toEqual(["hold", "s1", "a10", "a20", "a30", "s2"]);
});

it("takes a withdrawn waiter out of the queue at once; it never gets a slot", async () => {
  const { pool, run } = poolOf({ max_replicas: 1, replica_concurrency: 1 });
  let holdEnded = false;
  const hold = run("hold", 300).finally(() => {
    holdEnded = true;
  });
  const gaveUp = new AbortController();
  const withdrawn = run("gave-up", 10, { signal: gaveUp.signal });
  const async = new AbortController();
  const withdrawnRun = run("run-gone", 10, { signal: async.signal, order: 1, waitMs: 60_000 });
  const next = run("next", 10);
  expect(pool.stats()[0]?.queued).toBe(3);

  gaveUp.abort();
  async.abort();
  expect(pool.stats()[0]?.queued).toBe(1);
  expect((await failureOf(withdrawn)).failure.kind).toBe("withdrawn");
  expect((await failureOf(withdrawnRun)).message).toMatch(/withdrawn while it waited/);
  expect(holdEnded, "not after the call holding the slot").toBe(false);

  expect(await Promise.all([hold, next])).toEqual(["hold", "next"]);
  expect(await starts()).toEqual(["hold", "next"]);
  // Given up before it came: refused at once, even with a slot free.
  expect((await failureOf(run("late", 10, { signal: gaveUp.signal }))).failure.kind).toBe(
    "withdrawn",
  );
  expect(await starts()).toEqual(["hold", "next"]);
});

it("refuses a waiter past maxWaiting at once, and a sync one past its wait; an async run waits on", async () => {
  const { pool, run } = poolOf(
    { max_replicas: 1, replica_concurrency: 1 },
    { queueWaitMs: 100, maxWaiting: 2 },
  );
  const hold = run("hold", 400);
  const impatient = run("impatient", 10); // queueWaitMs: 100 ms
  const patient = run("patient", 10, { order: 1, waitMs: Number.POSITIVE_INFINITY });
  const full = await failureOf(run("one-too-many", 10));
  expect(full.failure.kind).toBe("busy");
  expect(full.message).toMatch(/at capacity \(1 replica × 1 concurrent call, all busy\)/);
  expect(full.message).toMatch(/queue is full \(2 calls waiting\)/);

  const timedOut = await failureOf(impatient);
  expect(timedOut.failure.kind).toBe("busy");
  expect(timedOut.message).toMatch(/waited 0.1 s for a slot/);
  expect(pool.stats()[0]?.queued).toBe(1);
  expect(await Promise.all([hold, patient])).toEqual(["hold", "patient"]);
  expect(await starts()).toEqual(["hold", "patient"]);
});

it("never runs more calls at once than max_replicas × replica_concurrency", async () => {
  const { pool, run } = poolOf({ max_replicas: 2, replica_concurrency: 2 });
  const calls = Array.from({ length: 40 }, (_, i) =>
    i % 3 === 0
      ? run(`a${i}`, 5 + (i % 4) * 10, { order: (i * 7919) % 40, waitMs: Number.POSITIVE_INFINITY })
      : run(`s${i}`, 5 + (i % 4) * 10),
  );
  expect(pool.stats()[0]?.queued).toBe(36);
  const results = await Promise.all(calls);
  expect(new Set(results).size).toBe(40);
  expect(await mostAtOnce()).toBe(4);
  expect(pool.stats()[0]?.replicas).toHaveLength(2);
});

it("lets a sync call queued behind a slow start wait for it, then its wait from the first replica ready", async () => {
  // The module loads for about 1.5 s, within its start_timeout; the queue wait is 0.3 s.
  await writeFile(
    join(home, "main.mjs"),
    `await new Promise((r) => setTimeout(r, 1_500));\n${APP}`,
  );
  const { run } = poolOf(
    { max_replicas: 1, replica_concurrency: 1 },
    { queueWaitMs: 300 },
    { start_timeout: 5 },
  );
  const first = run("first", 10); // starts the replica
  const behind = run("behind", 1_000); // queued while it starts: counted from the start, 429
  expect(await Promise.all([first, behind])).toEqual(["first", "behind"]);
  // The replica is ready now: a call queued behind a busy one waits 0.3 s, as before.
  const busy = run("busy", 1_000);
  const refused = await failureOf(run("refused", 10));
  expect(refused.message).toMatch(/waited 0.3 s for a slot/);
  expect(await busy).toBe("busy");
});

it("tells a call queued behind a start that fails the app's start error, not that it is busy", async () => {
  await writeFile(join(home, "main.mjs"), "await new Promise(() => setInterval(() => {}, 1000));");
  const { run } = poolOf(
    { max_replicas: 1, replica_concurrency: 1 },
    { queueWaitMs: 300 },
    { start_timeout: 1 },
  );
  const first = failureOf(run("first", 10));
  const behind = failureOf(run("behind", 10)); // its own replica starts once the first's failed
  for (const failure of await Promise.all([first, behind]))
    expect(failure.message).toMatch(/did not load within 1 s, the app's start_timeout/);
});
