// Async runs waiting for a replica slot on the real host: handed over faster than the app can
// take them, they wait queued — never refused for capacity — and start oldest first, one at a
// time; a submitter going away withdraws its queued run, a cancel ends it; the
// response_grace_period counts from the start. The app logs each run's start and end to a file.

import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { HEADER } from "../common/consts.ts";
import { newId } from "../common/ids.ts";
import type { HostRun } from "../common/protocol/host.ts";
import type { HostLimits } from "./limits.ts";
import type { RunningHost } from "./server.ts";
import {
  configOf,
  eventually,
  hostClient,
  newHome,
  removeHome,
  startReceiver,
  startTestHost,
  TOKEN,
} from "./test-support.ts";

const APP = {
  "main.mjs": `
import { appendFileSync } from "node:fs";
export async function work({ ms, log }, ctx) {
  appendFileSync(log, "start " + ctx.runId + "\\n");
  await new Promise((resolve) => setTimeout(resolve, ms));
  appendFileSync(log, "end " + ctx.runId + "\\n");
  return ctx.runId;
}`,
};

let home: string;
let log: string;
let host: RunningHost;
let receiver: Awaited<ReturnType<typeof startReceiver<HostRun>>>;

beforeEach(async () => {
  home = await newHome();
  log = join(home, "runs.log");
  await writeFile(log, "");
  receiver = await startReceiver<HostRun>();
});

afterEach(async () => {
  await host.close();
  await receiver.close();
  await removeHome(home);
});

/** A host with the app deployed: one replica, one run at a time. */
async function start(extra: Record<string, unknown> = {}, limits: Partial<HostLimits> = {}) {
  host = await startTestHost(home, { limits });
  const scaling = { max_replicas: 1, replica_concurrency: 1 };
  const config = configOf("jobs", { scaling, ...extra });
  expect((await hostClient(host.url).deploy("p", "jobs", 1, APP, config)).status).toBe(200);
}

const submit = (runId: string, ms: number, waitMs = 0, signal?: AbortSignal) =>
  fetch(`${host.url}/internal/async/p/jobs/work`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${TOKEN}`,
      [HEADER.runId]: runId,
      [HEADER.callbackUrl]: `${receiver.url}/done`,
      [HEADER.waitMs]: String(waitMs),
    },
    body: JSON.stringify({ ms, log }),
    signal,
  });

const answerOf = async (res: Promise<Response>) => {
  const answer = await res;
  return {
    status: answer.status,
    body: (await answer.json()) as HostRun & { run?: HostRun; message?: string },
  };
};

const runState = async (runId: string, method = "GET") =>
  answerOf(
    fetch(`${host.url}/internal/runs/${runId}`, {
      method,
      headers: { authorization: `Bearer ${TOKEN}` },
    }),
  );

const statusOf = async (runId: string) => (await runState(runId)).body.status;

/** Run ids in the order they started, and the most that ran at once. */
async function runsLogged(): Promise<{ started: string[]; mostAtOnce: number }> {
  const lines = (await readFile(log, "utf8")).split("\n").filter(Boolean);
  let running = 0;
  let mostAtOnce = 0;
  const started: string[] = [];
  for (const [event, runId = ""] of lines.map((line) => line.split(" "))) {
    if (event === "start") started.push(runId);
    running += event === "start" ? 1 : -1;
    mostAtOnce = Math.max(mostAtOnce, running);
  }
  return { started, mostAtOnce };
}

/** A run taking the app's one slot; resolves once it is running. */
async function blocker(ms: number): Promise<string> {
  const runId = newId("run");
  expect((await submit(runId, ms)).status).toBe(202);
  return runId;
}

it("runs ten runs handed over at once one at a time, oldest first; none is refused or fails", async () => {
  await start();
  // Long enough for all ten to reach the host while it runs, on a machine busy with other tests:
  // the order they start in is then the host's choice, not their arrival's.
  const first = await blocker(3_000);
  // Created in this order, handed over shuffled (as from several of the Worker's shards).
  const ids = Array.from({ length: 10 }, (_, i) => newId("run", Date.now() - 60_000 + i));
  const shuffled = [3, 7, 0, 9, 1, 5, 8, 2, 6, 4].map((i) => ids[i] as string);
  const answers = shuffled.map((runId) => answerOf(submit(runId, 50, 1_000)));
  await eventually(
    async () => (await hostClient(host.url).metrics())[0]?.queued,
    (queued) => queued === 10,
  );
  for (const { status, body } of await Promise.all(answers)) {
    expect([200, 202]).toContain(status);
    const end =
      status === 200
        ? body
        : await eventually(
            async () => receiver.received.find((r) => r.body.runId === body.runId)?.body,
            (ended) => ended !== undefined,
          );
    expect(end).toMatchObject({ status: "success", result: body.runId });
  }
  const { started, mostAtOnce } = await runsLogged();
  expect(started).toEqual([first, ...ids]);
  expect(mostAtOnce).toBe(1);
});

it("withdraws a queued run whose submitter went away: the host forgets it, it never runs", async () => {
  await start();
  const first = await blocker(400);
  const gone = new AbortController();
  const runId = newId("run");
  const submitted = submit(runId, 10, 0, gone.signal);
  await eventually(
    () => statusOf(runId),
    (status) => status === "queued",
  );
  gone.abort();
  await expect(submitted).rejects.toThrow();
  await eventually(runState.bind(null, runId), ({ status }) => status === 404, 300);
  expect((await hostClient(host.url).metrics())[0]?.queued).toBe(0);
  await eventually(
    () => statusOf(first),
    (status) => status === "success",
  );
  await new Promise((r) => setTimeout(r, 100));
  expect((await runsLogged()).started).toEqual([first]);
  expect(receiver.received.map((r) => r.body.runId)).toEqual([first]);

  // The Worker still holds it and hands it over again: now it runs.
  expect((await answerOf(submit(runId, 10, 1_000))).body).toMatchObject({ status: "success" });
});

it("cancels a queued run at once: it never runs, and its submitter gets 200 with it", async () => {
  await start();
  const first = await blocker(400);
  const runId = newId("run");
  const submitted = answerOf(submit(runId, 10, 1_000));
  await eventually(
    () => statusOf(runId),
    (status) => status === "queued",
  );
  const cancelled = await runState(runId, "DELETE");
  expect(cancelled.status).toBe(200);
  expect(cancelled.body).toMatchObject({ runId, status: "cancelled" });
  const answer = await submitted;
  expect(answer.status).toBe(200);
  expect(answer.body).toMatchObject({ runId, status: "cancelled", finishedAt: expect.any(Number) });
  expect(answer.body.startedAt).toBeUndefined();
  expect(await statusOf(first)).toBe("running"); // it did not wait for the slot

  await eventually(
    () => statusOf(first),
    (status) => status === "success",
  );
  await new Promise((r) => setTimeout(r, 100));
  expect((await runsLogged()).started).toEqual([first]);
  expect(receiver.received.map((r) => r.body.runId)).toEqual([first]); // no callback
  expect(await statusOf(runId)).toBe("cancelled");
});

it("answers a second submission of a known run 409 with the run, queued or ended", async () => {
  await start();
  await blocker(300);
  const runId = newId("run");
  const submitted = submit(runId, 10, 1_000);
  await eventually(
    () => statusOf(runId),
    (status) => status === "queued",
  );
  const again = await answerOf(submit(runId, 10));
  expect(again.status).toBe(409);
  expect(again.body.message).toMatch(/exists already \(queued\)/);
  expect(again.body.run).toMatchObject({ runId, status: "queued" });
  expect((await submitted).status).toBe(200);
  const late = await answerOf(submit(runId, 10));
  expect(late.status).toBe(409);
  expect(late.body.run).toMatchObject({ runId, status: "success" });
});

it("counts the response_grace_period from the run's start, not from its submission", async () => {
  await start({ response_grace_period: 1 });
  const first = await blocker(700);
  const runId = newId("run");
  // Queued about 0.7 s, then runs 0.5 s: 1.2 s after its submission, 0.5 s after its start.
  const { status, body } = await answerOf(submit(runId, 500, 1_000));
  expect(status).toBe(200);
  expect(body).toMatchObject({ runId, status: "success" });
  const firstEnd = (await runState(first)).body;
  expect(Number(body.startedAt)).toBeGreaterThanOrEqual(Number(firstEnd.finishedAt));
  expect(Number(body.deadlineAt) - Number(body.startedAt)).toBe(1_000);
});

it("refuses a run 429 only when the app's queue is full, and forgets it", async () => {
  await start({}, { maxWaiting: 1 });
  await blocker(300);
  const queued = newId("run");
  const waiting = submit(queued, 10, 1_000);
  await eventually(
    () => statusOf(queued),
    (status) => status === "queued",
  );
  const refused = newId("run");
  const answer = await answerOf(submit(refused, 10));
  expect(answer.status).toBe(429);
  expect(answer.body.message).toMatch(/queue is full \(1 calls waiting\)/);
  expect((await runState(refused)).status).toBe(404);
  expect((await waiting).status).toBe(200);
});

it("refuses a queued run 404 when its app is removed meanwhile, and forgets it", async () => {
  await start();
  // Long enough to still run when the app is removed, on a machine busy with other tests: with
  // 300 ms the queued run had started by then, once in a CI run (answered 200).
  await blocker(2_000);
  const runId = newId("run");
  const submitted = answerOf(submit(runId, 10, 5_000));
  await eventually(
    () => statusOf(runId),
    (status) => status === "queued",
  );
  // The blocker's function has started (a cold start under load can take a while): deleting
  // the app now lets it finish, and takes only the queued run.
  await eventually(
    async () => (await runsLogged()).started.length,
    (count) => count === 1,
  );
  const removed = await fetch(`${host.url}/internal/apps/p/jobs`, {
    method: "DELETE",
    headers: { authorization: `Bearer ${TOKEN}` },
  });
  expect(removed.status).toBe(204);
  const answer = await submitted;
  expect(answer.status).toBe(404);
  expect(answer.body.message).toBe("the app was deleted");
  expect((await runState(runId)).status).toBe(404);
  expect((await runsLogged()).started).toHaveLength(1);
});

it("withdraws queued runs when the host stops: their submitters are refused", async () => {
  await start();
  await blocker(5_000);
  const runId = newId("run");
  const submitted = submit(runId, 10).then(
    (res) => res.status,
    () => 0, // or the connection ended
  );
  await eventually(
    () => statusOf(runId),
    (status) => status === "queued",
  );
  await host.close();
  expect([0, 503]).toContain(await submitted);
  expect((await runsLogged()).started).toHaveLength(1);
});
