/**
 * Cancelling a run (`RunShard.cancel`, what `DELETE /v4/…/runs/{id}` calls): a queued run is
 * cancelled at once and never handed over afterwards; one the host holds or runs is stopped on
 * the host too; an ended run, a sync run or an unknown id is refused, and with `onlyIfQueued` a
 * running one. A cancelled run is
 * reported to the runs index by its shard and delivers nothing.
 */
import { env, fetchMock } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { newId } from "../../common/ids.ts";
import type { RunView } from "../../common/protocol/run-view.ts";
import {
  APP_ID,
  accept,
  busy,
  endsReported,
  fakeHost,
  Gate,
  HOOKS,
  HOST,
  lastReportOf,
  newApp,
  newRun,
  receiver,
  rowOf,
  shardOfRun,
  sleep,
  started,
  startFakes,
  statusIs,
  until,
  viewOf,
} from "./test-support.ts";
import type { NewRun } from "./types.ts";

beforeAll(startFakes);

/**
 * The host's `DELETE /internal/runs/{id}` for `run`, answered `state` (after `delayMs`); says how
 * many it received.
 */
function hostCancels(run: NewRun, state: object = {}, delayMs = 0): () => number {
  let count = 0;
  const answer = fetchMock
    .get(HOST)
    .intercept({
      path: `/internal/runs/${run.runId}`,
      method: "DELETE",
      headers: { authorization: `Bearer ${env.INTERNAL_TOKEN}` },
    })
    .reply(() => {
      count++;
      return { statusCode: 200, data: JSON.stringify(state) };
    });
  (delayMs > 0 ? answer.delay(delayMs) : answer).persist();
  return () => count;
}

/** A receiver that must never be called: counts the deliveries it got. */
function silentReceiver(path: string): () => number {
  let count = 0;
  fetchMock
    .get(HOOKS)
    .intercept({ path, method: "POST" })
    .reply(() => {
      count++;
      return { statusCode: 200, data: "" };
    })
    .persist();
  return () => count;
}

describe("cancel", () => {
  it("a queued run (the host busy): cancelled at once, never handed over after, reported; a second cancel is 409", async () => {
    const app = newApp();
    const host = fakeHost(app, () => busy);
    const run = newRun(app);
    const deletes = hostCancels(run);
    const delivered = silentReceiver(`/${run.runId}`);
    await accept(run, { webhook: { url: `${HOOKS}/${run.runId}`, secret: "k" } });
    await until("the host said busy", () => host.count(run) === 1);
    await sleep(20);
    const shard = shardOfRun(run);
    const view = await shard.cancel(run.runId, APP_ID);
    // It never ran: no run time.
    expect(view).toMatchObject({
      run_id: run.runId,
      status: "cancelled",
      started_at: null,
      run_time_ms: null,
    });
    expect(view).toHaveProperty("finished_at", expect.any(String));
    // The pauses (250 ms, then 500 ms) pass: it is not handed over again.
    await sleep(900);
    expect(host.count(run)).toBe(1);
    expect(deletes()).toBe(0); // the host never had it
    expect(delivered()).toBe(0);
    expect(await endsReported(run)).toEqual(["cancelled"]);
    expect(await rowOf(run)).toMatchObject({ hook_secret: null, hook_url: null, payload: null });
    // Its webhook says nothing was sent because the run was cancelled, not that it failed.
    expect((await shard.view(run.runId))?.webhook).toMatchObject({
      state: "cancelled",
      attempts: [],
    });
    expect(await shard.cancel(run.runId, APP_ID)).toEqual({
      refused: { status: 409, message: `run '${run.runId}' has already ended: cancelled` },
    });
  });

  it("a run whose hand-over the host still holds: cancelled at once, withdrawn, stopped on the host; its late 202 changes nothing", async () => {
    const app = newApp();
    const held = new Gate();
    const host = fakeHost(app, () => ({ ...started(), hold: held }));
    const run = newRun(app);
    const deletes = hostCancels(run);
    await accept(run);
    await until("the host holds its hand-over", () => host.count(run) === 1);
    expect(await shardOfRun(run).cancel(run.runId, APP_ID)).toMatchObject({ status: "cancelled" });
    expect(deletes()).toBe(1);
    held.open();
    await sleep(100);
    expect(await viewOf(run)).toMatchObject({ status: "cancelled", started_at: null });
    expect(await endsReported(run)).toEqual(["cancelled"]);
  });

  it("a run the host started the instant it was cancelled, before its hand-over's answer: its view says when", async () => {
    const app = newApp();
    const held = new Gate();
    const host = fakeHost(app, () => ({ ...started(), hold: held }));
    const run = newRun(app);
    const startedAt = Date.now() - 1000;
    hostCancels(run, { status: "cancelled", startedAt, finishedAt: Date.now() });
    await accept(run);
    await until("the host holds its hand-over", () => host.count(run) === 1);
    const view = (await shardOfRun(run).cancel(run.runId, APP_ID)) as RunView;
    // It said started_at null though the function had begun (and seen its signal abort).
    expect(view).toMatchObject({
      status: "cancelled",
      started_at: new Date(startedAt).toISOString(),
    });
    // And it ran from then until the cancel (it said null).
    expect(view.run_time_ms).toBe(Date.parse(view.finished_at as string) - startedAt);
    held.open();
  });

  it("…and the runs index hears when it began and how long it ran, though the host answered the cancel after the index had the cancel", async () => {
    const app = newApp();
    const held = new Gate();
    const host = fakeHost(app, () => ({ ...started(), hold: held }));
    const run = newRun(app);
    const startedAt = Date.now() - 1000;
    // Past the 200 ms a shard gathers reports for: the index confirms "cancelled" first.
    hostCancels(run, { status: "cancelled", startedAt, finishedAt: Date.now() }, 600);
    await accept(run);
    await until("the host holds its hand-over", () => host.count(run) === 1);
    const view = (await shardOfRun(run).cancel(run.runId, APP_ID)) as RunView;
    // It kept the run time of its first report (null): the index lists it with none.
    expect(
      await lastReportOf(run, "its run time reported", (r) => r.runTimeMs !== null),
    ).toMatchObject({ status: "cancelled", runTimeMs: view.run_time_ms });
    held.open();
  });

  it("a running run: stopped on the host, with how long it ran; its later report does not move it", async () => {
    const app = newApp();
    // Started 1.5 s before the host's answer said so: its run time is at least that.
    const startedAt = Date.now() - 1500;
    fakeHost(app, () => ({
      status: 202,
      body: { status: "running", startedAt, deadlineAt: Date.now() + 900_000 },
    }));
    const run = newRun(app);
    const deletes = hostCancels(run, { status: "cancelled", startedAt, finishedAt: Date.now() });
    await accept(run);
    await statusIs(run, "running");
    const shard = shardOfRun(run);
    const view = (await shard.cancel(run.runId, APP_ID)) as RunView;
    expect(view).toMatchObject({
      status: "cancelled",
      started_at: new Date(startedAt).toISOString(),
    });
    // It ran from its start until it was cancelled: run_time_ms was null.
    const ranFor = Date.parse(view.finished_at as string) - startedAt;
    expect(ranFor).toBeGreaterThanOrEqual(1500);
    expect(view.run_time_ms).toBe(ranFor);
    expect(
      await lastReportOf(run, "its cancel reported", (r) => r.status === "cancelled"),
    ).toMatchObject({ runTimeMs: ranFor });
    expect(deletes()).toBe(1);
    expect(await shard.report(run.runId, { status: "success", result: 1 })).toEqual({
      status: "cancelled",
    });
    expect(await viewOf(run)).toMatchObject({ status: "cancelled" });
    expect(await endsReported(run)).toEqual(["cancelled"]);
  });

  it("onlyIfQueued (runlet cancel --app --queued): a running run is 409 and runs on, untouched on its host; a queued one is cancelled", async () => {
    const app = newApp();
    fakeHost(app, () => ({
      status: 202,
      body: { status: "running", startedAt: Date.now(), deadlineAt: Date.now() + 900_000 },
    }));
    const running = newRun(app);
    const deletes = hostCancels(running);
    await accept(running);
    await statusIs(running, "running");
    const shard = shardOfRun(running);
    expect(await shard.cancel(running.runId, APP_ID, true)).toEqual({
      refused: {
        status: 409,
        message: `run '${running.runId}' has started (running): onlyIfQueued=true cancels only a queued run`,
      },
    });
    expect(deletes()).toBe(0);
    expect(await viewOf(running)).toMatchObject({ status: "running" });

    const other = newApp();
    fakeHost(other, () => busy);
    const queued = newRun(other);
    await accept(queued);
    expect(await shardOfRun(queued).cancel(queued.runId, APP_ID, true)).toMatchObject({
      status: "cancelled",
      started_at: null,
    });
  });

  it("an ended run is 409; so is a sync run; an unknown id is null", async () => {
    const app = newApp();
    fakeHost(app, () => ({ status: 200, body: { status: "success", result: 1 } }));
    const ended = newRun(app);
    await accept(ended);
    await statusIs(ended, "success");
    const shard = shardOfRun(ended);
    expect(await shard.cancel(ended.runId, APP_ID)).toEqual({
      refused: { status: 409, message: `run '${ended.runId}' has already ended: success` },
    });
    const sync = newRun(app);
    receiver(`/${sync.runId}`, [200]);
    const outcome = { status: "success" as const, result: 1, run_time_ms: 1 };
    await shard.record(sync, outcome, { url: `${HOOKS}/${sync.runId}` });
    expect(await shard.cancel(sync.runId, APP_ID)).toEqual({
      refused: { status: 409, message: "only async runs can be cancelled" },
    });
    expect(await shard.cancel(newRun(app).runId, APP_ID)).toBeNull();
  });

  it("a run of an earlier app of the name (deleted, deployed again since): 409 for the new app's callers, still queued; its own app's cancel works", async () => {
    const app = newApp();
    fakeHost(app, () => busy);
    const run = { ...newRun(app), appId: "app_earlier" };
    await accept(run);
    const shard = shardOfRun(run);
    const refused = await shard.cancel(run.runId, "app_since");
    expect(refused).toEqual({
      refused: {
        status: 409,
        message: `run '${run.runId}' belongs to an earlier app '${app}', deleted since: the app deployed under its name since is another, so the run can be read but not cancelled`,
      },
    });
    expect(await viewOf(run)).toMatchObject({ status: "queued" });
    expect(await shard.cancel(run.runId, "app_earlier")).toMatchObject({ status: "cancelled" });

    // Made after the new app, though a Worker's 10 s lookup still gave it the deleted app's id:
    // the new app's run (as the host runs it), so its callers may cancel it.
    const since = newId("app");
    await sleep(5);
    const late = { ...newRun(app), appId: "app_earlier" };
    await accept(late);
    expect(await shardOfRun(late).cancel(late.runId, since)).toMatchObject({ status: "cancelled" });
  });
});
