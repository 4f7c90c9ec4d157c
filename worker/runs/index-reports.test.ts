/**
 * The runs index hears every async run's end from its shard (index-reports.ts): gathered into
 * batches, and kept in the run's row until the index has taken it, so a control plane that is
 * away for a while, or a shard that restarts, loses no end. The index is fetchMock's.
 */
import { beforeAll, expect, it } from "vitest";
import {
  accept,
  ended,
  endsReported,
  fakeHost,
  indexRefuses,
  indexTakes,
  lastReportOf,
  newApp,
  newRun,
  reportsOf,
  restart,
  rowOf,
  sleep,
  startFakes,
  statusIs,
  until,
} from "./test-support.ts";

beforeAll(startFakes);

it("sends each async end once, many in one batch", async () => {
  const app = newApp();
  fakeHost(app, () => ended({ status: "success", result: 1 }));
  const runs = Array.from({ length: 5 }, () => newRun(app, { k: 0 }));
  for (const run of runs) await accept(run);
  for (const run of runs) expect(await endsReported(run)).toEqual(["success"]);
  for (const run of runs) expect((await rowOf(run))?.indexed).toBe(1);
  // Once: a "queued" may have gone first on a slow machine, but never a second end.
  for (const run of runs) {
    expect((await reportsOf(run, 0)).filter((status) => status === "success")).toHaveLength(1);
  }
});

it("keeps an end the index refused in the run's row and sends it again until it is taken", async () => {
  const app = newApp();
  fakeHost(app, () => ended({ status: "failure", error: { message: "boom" } }));
  const run = newRun(app, { k: 0 });
  indexRefuses(2, run.runId);
  await accept(run);
  await statusIs(run, "failure");
  await until("the refused end, still in the row", async () => (await rowOf(run))?.indexed === 0);
  // Sent again by the shard's alarm after 1 s, then 2 s.
  await until("the end taken at last", async () => (await rowOf(run))?.indexed === 1, 8_000);
  expect(await endsReported(run)).toEqual(["failure"]);
}, 15_000);

it("sends the ends a stopped instance left unconfirmed as soon as the shard comes back", async () => {
  const app = newApp();
  fakeHost(app, () => ended({ status: "success", result: 2 }));
  indexRefuses(1_000);
  const run = newRun(app, { k: 1 });
  await accept(run);
  await statusIs(run, "success");
  await until("the end, unconfirmed", async () => (await rowOf(run))?.indexed === 0);
  indexRefuses(0);
  await restart(app, 1);
  await until("the end taken", async () => (await rowOf(run))?.indexed === 1, 3_000);
  expect(await endsReported(run)).toEqual(["success"]);
});

it("sends an end that came while a batch was on its way, with no other run to follow", async () => {
  const app = newApp();
  fakeHost(app, () => ended({ status: "success", result: 3 }));
  indexTakes(600);
  try {
    const first = newRun(app, { k: 2 });
    await accept(first);
    await sleep(300); // its batch leaves after 200 ms, and is taken 600 ms later
    const last = newRun(app, { k: 2 });
    await accept(last);
    await statusIs(last, "success");
    // Its batch's turn came while the first was on its way: it waited for another run's.
    expect(await endsReported(last)).toEqual(["success"]);
    await until("its row confirmed", async () => (await rowOf(last))?.indexed === 1, 3_000);
  } finally {
    indexTakes(0);
  }
});

it("tells the index a custom app's run's status code, as the host does a sync one's", async () => {
  const app = newApp();
  const http = { status_code: 201, content_type: "text/plain", body: "made" };
  fakeHost(app, () => ended({ result: undefined, http }));
  const run = newRun(app, { fn: "POST /things" });
  await accept(run);
  const report = await lastReportOf(run, "its end", (r) => r.status === "success");
  expect(report).toMatchObject({ function: "POST /things", statusCode: 201 });
});
