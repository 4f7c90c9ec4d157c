/**
 * The watchdog of running async runs (RunShard.alarm → GET {host}/internal/runs/{id}): a run the
 * host lost fails, an end the host knows is taken, three unanswered questions in a row or a
 * deadline passed by a minute fail the run; and `wake(origin)`, which makes every running run
 * due at once and moves the host's callbacks to the Worker's origin (RUN_WATCHDOG_MS is not set
 * in the tests: a question is due 30 s after the last, so the tests make it due with `wake` and
 * run the alarm).
 */
import { fetchMock, runDurableObjectAlarm } from "cloudflare:test";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { forgetPlacement } from "../placement.ts";
import {
  accept,
  alarmOf,
  busy,
  CONTROL,
  deliveryEnded,
  endsReported,
  fakeHost,
  HOOKS,
  HOST,
  hostRunStates,
  newApp,
  newRun,
  ORIGIN,
  PROJECT,
  receiver,
  rowOf,
  shardNamed,
  shardOfRun,
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

/** A run of a new app that the host started (deadline `deadlineAt`), with an optional webhook. */
async function runningRun(deadlineAt?: number, webhook = false): Promise<NewRun> {
  const app = newApp();
  fakeHost(app, () => started(deadlineAt));
  const run = newRun(app);
  await accept(run, webhook ? { webhook: { url: `${HOOKS}/${run.runId}` } } : {});
  await statusIs(run, "running");
  return run;
}

/**
 * Makes the run due now and runs its shard's alarm: one question to the host; then waits until
 * the row shows the answer was taken (`taken`), or a moment.
 */
async function check(run: NewRun, asked: () => number, taken = (_: Row) => true) {
  const before = asked();
  const shard = shardOfRun(run);
  await shard.wake(ORIGIN);
  await runDurableObjectAlarm(shard);
  await until("the host asked", () => asked() === before + 1);
  await sleep(20);
  await until("the answer taken", async () => taken((await rowOf(run)) as Row));
}

type Row = { status: string; host_misses: number };
const misses = (n: number) => (row: Row) => row.host_misses === n;

describe("watchdog", () => {
  it("fails a run the host no longer knows (404), delivers and reports that", async () => {
    const run = await runningRun(undefined, true);
    const got = receiver(`/${run.runId}`, [200]);
    const host = hostRunStates(run, [404]);
    await check(run, host.asked);
    const message = "the runtime host lost the run (it restarted or stopped)";
    expect(await deliveryEnded(run)).toMatchObject({ status: "failure", error: { message } });
    expect(JSON.parse(got[0]?.body ?? "{}")).toMatchObject({
      status: "failure",
      error: { message },
    });
    expect(await endsReported(run)).toEqual(["failure"]);
  });

  it("takes the end from the host when its report was lost, and tells the index", async () => {
    const run = await runningRun();
    const finishedAt = Date.now();
    const host = hostRunStates(run, [{ status: "success", result: 5, runTimeMs: 4, finishedAt }]);
    await check(run, host.asked);
    expect(await viewOf(run)).toMatchObject({
      status: "success",
      run_time_ms: 4,
      finished_at: new Date(finishedAt).toISOString(),
    });
    expect(await endsReported(run)).toEqual(["success"]);
  });

  it("asks with the internal token, keeps a run the host says is running, and asks again in 30 s", async () => {
    const run = await runningRun();
    const host = hostRunStates(run, [{ status: "running" }]);
    await check(run, host.asked);
    expect(await viewOf(run)).toMatchObject({ status: "running" });
    const { due_at } = (await rowOf(run)) as { due_at: number };
    expect(due_at - Date.now()).toBeGreaterThan(29_000);
    expect(due_at - Date.now()).toBeLessThanOrEqual(30_000);
    expect(await alarmOf(shardOfRun(run))).toBe(due_at);
  });

  it("gives a run up after three questions in a row went unanswered", async () => {
    const run = await runningRun();
    const host = hostRunStates(run, ["error", 503, "error"]);
    for (let i = 1; i <= 2; i++) {
      await check(run, host.asked, misses(i));
      expect(await viewOf(run)).toMatchObject({ status: "running" });
    }
    await check(run, host.asked, (row) => row.status !== "running");
    expect(await viewOf(run)).toMatchObject({
      status: "failure",
      error: { message: "the runtime host stopped answering about the run" },
    });
    expect(await endsReported(run)).toEqual(["failure"]);
  });

  it("counts only unanswered questions in a row: an answer in between starts the count again", async () => {
    const run = await runningRun();
    const host = hostRunStates(run, ["error", "error", { status: "running" }, "error", "error"]);
    for (const n of [1, 2, 0, 1, 2]) await check(run, host.asked, misses(n));
    expect(await viewOf(run)).toMatchObject({ status: "running" });
  });

  it.each([
    ["61 s past its deadline", 61_000, "failure"],
    ["30 s past its deadline", 30_000, "running"],
  ])("a run %s while the host says running: %s", async (_, late, status) => {
    const run = await runningRun(Date.now() - late);
    const host = hostRunStates(run, [{ status: "running" }]);
    await check(run, host.asked);
    const view = await viewOf(run);
    expect(view?.status).toBe(status);
    if (status === "failure")
      expect(view?.error?.message).toBe(
        "the run did not finish within the app's response_grace_period",
      );
  });
});

describe("wake", () => {
  it("makes every running run due at once, hands queued runs over at once, and says how many", async () => {
    const app = newApp();
    const waiting = newRun(app);
    const host = fakeHost(app, (h) => (h.runId === waiting.runId ? busy : started()));
    const runs = [newRun(app), newRun(app)];
    for (const run of runs) await accept(run);
    for (const run of runs) await statusIs(run, "running");
    await accept(waiting);
    // Each "busy" doubles the shard's pause (250, 500, 1,000 ms): after the fourth answer the
    // shard would wait 2 s before trying again, far longer than a wake takes on a loaded machine.
    await until("the host said busy four times", () => host.count(waiting) === 4, 10_000);
    const pauseEnds = (host.handOvers.at(-1)?.at ?? 0) + 2_000;
    const questions = runs.map((run) => hostRunStates(run, [{ status: "running" }]));
    const shard = shardNamed(app);
    expect(await shard.wake(ORIGIN)).toEqual({ queued: 1, running: 2 });
    // Handed over again before its pause ended.
    await until("the queued run handed over", () => host.count(waiting) === 5);
    expect(host.handOvers.at(-1)?.at).toBeLessThan(pauseEnds);
    const due = await sql<{ due_at: number }>(
      shard,
      "SELECT due_at FROM runs WHERE status = 'running'",
    );
    expect(due.map((r) => r.due_at <= Date.now())).toEqual([true, true]);
    await runDurableObjectAlarm(shard);
    for (const q of questions) await until("the host asked about each", () => q.asked() === 1);
  });

  it("sends the host's callbacks to the origin the Worker is woken at", async () => {
    const app = newApp();
    const host = fakeHost(app, () => busy);
    const run = newRun(app);
    await accept(run);
    await until("the first hand-over", () => host.count(run) === 1);
    await shardNamed(app).wake("http://127.0.0.1:9999");
    await until("handed over again", () => host.count(run) === 2);
    expect(host.handOvers.map((h) => h.headers.get("x-runlet-callback-url"))).toEqual([
      `${ORIGIN}/internal/apps/${PROJECT}/${app}/runs/${run.runId}/complete`,
      `http://127.0.0.1:9999/internal/apps/${PROJECT}/${app}/runs/${run.runId}/complete`,
    ]);
    expect(await sql(shardNamed(app), "SELECT origin FROM shard")).toEqual([
      { origin: "http://127.0.0.1:9999" },
    ]);
  });
});

describe("the watchdog, with a registry of hosts", () => {
  /**
   * What the registry says of the one host it lists, at the fake host's address; undefined: it
   * cannot be read (503). One lasting reply: a one-shot one could be taken by another shard's
   * placement first, and the run would go to the host of the Worker's settings instead.
   */
  let hostState: string | undefined;
  beforeAll(() => {
    fetchMock
      .get(CONTROL)
      .intercept({ path: "/internal/hosts" })
      .reply(() =>
        hostState === undefined
          ? { statusCode: 503, data: '{"message":"restarting"}' }
          : {
              statusCode: 200,
              data: JSON.stringify({
                hosts: [
                  {
                    id: "hst_far",
                    address: HOST,
                    state: hostState,
                    slots: 8,
                    busy: 0,
                    queued: 0,
                    apps: [],
                  },
                ],
              }),
            },
      )
      .persist();
  });
  afterEach(() => {
    hostState = undefined;
    forgetPlacement();
  });
  const registry = (state: string | undefined) => {
    forgetPlacement();
    hostState = state;
  };

  it("fails a run at once when its host is silent and the registry has it down", async () => {
    registry("up");
    const run = await runningRun();
    expect(await rowOf(run)).toMatchObject({ host_id: "hst_far", host_url: HOST });
    registry("down");
    const host = hostRunStates(run, ["error"]);
    await check(run, host.asked, (row) => row.status !== "running");
    expect(await viewOf(run)).toMatchObject({
      status: "failure",
      host: "hst_far",
      // Not only "lost": a frozen or cut-off host may have finished it (an exploratory pass saw
      // runs that had succeeded reported as lost).
      error: {
        message: expect.stringMatching(
          /or stopped answering about it: the registry has it down, so whether it finished there is not known$/,
        ),
      },
    });
  });

  it("keeps asking while the registry cannot be read: nobody can tell the host is gone", async () => {
    registry("up");
    const run = await runningRun();
    registry(undefined);
    const host = hostRunStates(run, ["error"]);
    await check(run, host.asked, misses(1));
    expect(await viewOf(run)).toMatchObject({ status: "running" });
  });
});
