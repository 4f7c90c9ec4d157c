/**
 * A queued run's hand-over to the runtime host (worker/runs/host-calls.ts, driven by the shard):
 * what the host is sent, and what each answer makes of the run — 202 running, 200 its end at
 * once, 409 the state the host knows, 429/503/5xx/no answer a growing pause and another
 * hand-over (no answer: the host is asked about the run first), 400/404 a failure with the
 * host's message. Also the host's callback (`report`).
 */
import { env, fetchMock } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import {
  accept,
  busy,
  deliveryEnded,
  ended,
  endsReported,
  fakeHost,
  HOOKS,
  HOST,
  type HostReply,
  hostRunStates,
  newApp,
  newRun,
  ORIGIN,
  PROJECT,
  receiver,
  reportsOf,
  rowOf,
  shardOfRun,
  started,
  startFakes,
  statusIs,
  until,
  viewOf,
} from "./test-support.ts";

beforeAll(startFakes);

describe("what the host is sent", () => {
  it("a function's run: its path, run id, callback URL, wait, token and payload; the payload is dropped once it runs", async () => {
    const app = newApp();
    const host = fakeHost(app);
    const run = newRun(app, { fn: "hello world" });
    await accept(run, { payload: '{"name":"Ada"}' });
    await statusIs(run, "running");
    const [sent] = host.handOvers;
    expect(sent?.method).toBe("POST");
    expect(sent?.path).toBe(`/internal/async/${PROJECT}/${app}/hello%20world`);
    expect(sent?.body).toBe('{"name":"Ada"}');
    expect(Object.fromEntries(sent?.headers ?? [])).toMatchObject({
      authorization: `Bearer ${env.INTERNAL_TOKEN}`,
      "content-type": "application/json",
      "x-runlet-run-id": run.runId,
      "x-runlet-callback-url": `${ORIGIN}/internal/apps/${PROJECT}/${app}/runs/${run.runId}/complete`,
      "x-runlet-wait-ms": "100",
    });
    expect(await rowOf(run)).toMatchObject({ payload: null, request: null });
    // Without a webhook nobody reads its result: the host is told to keep none.
    expect(sent?.headers.get("x-runlet-no-result")).toBe("1");
  });

  it("a run with a webhook: the host is not told to keep no result", async () => {
    const app = newApp();
    const host = fakeHost(app);
    const run = newRun(app);
    await accept(run, { webhook: { url: `${HOOKS}/${run.runId}` } });
    await statusIs(run, "running");
    expect(host.handOvers[0]?.headers.has("x-runlet-no-result")).toBe(false);
  });

  it.each([
    ["PUT", '{"n":7}'],
    ["GET", ""],
  ])("a custom app's %s: sent as it came to /internal/async-http/…", async (method, body) => {
    const app = newApp();
    const host = fakeHost(app);
    const run = newRun(app, { fn: `${method} /items/7` });
    const request = { method, pathAndQuery: "/items/7?x=%2F1", headers: { "x-custom": "yes" } };
    await accept(run, { payload: body, request });
    await statusIs(run, "running");
    const [sent] = host.handOvers;
    expect(sent).toMatchObject({ method, body });
    expect(sent?.path).toBe(`/internal/async-http/${PROJECT}/${app}/items/7?x=%2F1`);
    expect(sent?.headers.get("x-custom")).toBe("yes");
    expect(sent?.headers.get("x-runlet-run-id")).toBe(run.runId);
    expect(sent?.headers.get("authorization")).toBe(`Bearer ${env.INTERNAL_TOKEN}`);
  });
});

describe("what the host's answer makes of the run", () => {
  it("202: running from the host's startedAt; its report ends it; the shard tells the index that end, once", async () => {
    const app = newApp();
    const startedAt = Date.now() - 20;
    fakeHost(app, () => ({ status: 202, body: { status: "running", startedAt } }));
    const run = newRun(app);
    expect(await accept(run)).toBeUndefined();
    expect(await statusIs(run, "running")).toMatchObject({
      started_at: new Date(startedAt).toISOString(),
      finished_at: null,
    });
    const report = { status: "success" as const, result: 2, runTimeMs: 12, finishedAt: Date.now() };
    expect(await shardOfRun(run).report(run.runId, report)).toEqual({ status: "success" });
    expect(await viewOf(run)).toMatchObject({
      status: "success",
      run_time_ms: 12,
      finished_at: new Date(report.finishedAt).toISOString(),
    });
    // Its "running" went first if the run lived past a batch's 200 ms (a slow machine).
    expect(await endsReported(run)).toEqual(["success"]);
    const sent = await reportsOf(run, 0);
    // A second report of the same end, or a late `running`, changes nothing.
    expect(await shardOfRun(run).report(run.runId, { status: "running" })).toEqual({
      status: "success",
    });
    expect(await reportsOf(run, sent.length + 1)).toEqual(sent);
  });

  it("200: from queued straight to the end the host answered, delivered", async () => {
    const app = newApp();
    const answer = ended({ status: "failure", error: { message: "boom" }, runTimeMs: 4 });
    fakeHost(app, () => answer);
    const run = newRun(app);
    const got = receiver(`/${run.runId}`, [200]);
    await accept(run, { webhook: { url: `${HOOKS}/${run.runId}` } });
    const view = await deliveryEnded(run);
    const { startedAt, finishedAt } = answer.body as Record<string, number>;
    expect(view).toMatchObject({
      status: "failure",
      error: { message: "boom" },
      run_time_ms: 4,
      started_at: new Date(startedAt as number).toISOString(),
      finished_at: new Date(finishedAt as number).toISOString(),
    });
    expect(JSON.parse(got[0]?.body ?? "{}")).toMatchObject({
      run_id: run.runId,
      status: "failure",
      error: { message: "boom" },
      run_time_ms: 4,
    });
    expect(await endsReported(run)).toEqual(["failure"]); // every async end, from its shard
  });

  it.each([
    ["running", { status: "running", startedAt: Date.now() }, "running"],
    ["ended", { status: "success", result: 1, runTimeMs: 2, finishedAt: Date.now() }, "success"],
  ])("409 with the run %s: takes the state the host knows", async (_, known, status) => {
    const app = newApp();
    fakeHost(app, () => ({ status: 409, body: { message: "already have it", run: known } }));
    const run = newRun(app);
    await accept(run);
    await statusIs(run, status);
  });

  const later: Array<[string, HostReply | "no answer"]> = [
    ["429 (busy)", busy],
    ["503 (stopping)", { status: 503, body: { message: "the host is stopping" } }],
    ["500", { status: 500, body: { message: "oops" } }],
    ["no answer", "no answer"],
    [
      "409, the run still waiting at the host",
      { status: 409, body: { run: { status: "queued" } } },
    ],
  ];

  it.each(later)(
    "%s: the run stays queued and is handed over again after a pause",
    async (_, first) => {
      const app = newApp();
      const run = newRun(app);
      if (first === "no answer") {
        fetchMock
          .get(HOST)
          .intercept({ path: `/internal/async/${PROJECT}/${app}/run`, method: "POST" })
          .replyWithError(new Error("connection refused"));
      }
      const host = fakeHost(app, () =>
        first !== "no answer" && host.handOvers.length === 1 ? first : started(),
      );
      const acceptedAt = Date.now();
      await accept(run);
      if (first !== "no answer") await until("the first hand-over", () => host.count(run) === 1);
      expect(await viewOf(run)).toMatchObject({ status: "queued" });
      await statusIs(run, "running");
      const again = host.handOvers.at(-1)?.at ?? 0;
      expect(
        again - (first === "no answer" ? acceptedAt : (host.handOvers[0]?.at ?? 0)),
      ).toBeGreaterThanOrEqual(240);
      // The index heard of it as accepted (queued, or running by then), never of an end.
      const reports = await reportsOf(run, 1);
      expect(reports.length).toBe(1);
      expect(["queued", "running"]).toContain(reports[0]);
    },
  );

  it("a hand-over whose connection breaks: the host is asked, and a run it started there stays there", async () => {
    const app = newApp();
    const run = newRun(app);
    // The link broke after the host took the run (its 202 never came back): it runs there.
    fetchMock
      .get(HOST)
      .intercept({ path: `/internal/async/${PROJECT}/${app}/run`, method: "POST" })
      .replyWithError(new Error("connection reset"));
    const asked = hostRunStates(run, [{ status: "running", startedAt: Date.now() }]);
    const host = fakeHost(app);
    await accept(run);
    await statusIs(run, "running");
    expect(asked.asked()).toBe(1);
    // Not handed over again (to this host or another): it would run twice.
    expect(host.count(run)).toBe(0);
  });

  it("the pause grows (250 ms, 500 ms, 1 s) while the host stays busy, and no run fails", async () => {
    const app = newApp();
    const host = fakeHost(app, (h) =>
      host.handOvers.filter((o) => o.runId === h.runId).length <= 3 ? busy : started(),
    );
    const runs = [newRun(app), newRun(app)];
    for (const run of runs) await accept(run);
    for (const run of runs) await statusIs(run, "running", 5_000);
    const times = host.handOvers.filter((h) => h.runId === runs[0]?.runId).map((h) => h.at);
    const gaps = times.slice(1).map((t, i) => t - (times[i] as number));
    expect(gaps).toHaveLength(3);
    expect(gaps.map((g, i) => g >= 250 * 2 ** i - 10)).toEqual([true, true, true]);
  });

  it.each([
    [404, "app 'x' is not deployed on this host"],
    [400, "the request is not valid"],
  ])(
    "%i: the run fails with the host's message, delivered and reported",
    async (status, message) => {
      const app = newApp();
      fakeHost(app, () => ({ status, body: { message } }));
      const run = newRun(app);
      const got = receiver(`/${run.runId}`, [200]);
      await accept(run, { webhook: { url: `${HOOKS}/${run.runId}` } });
      const view = await deliveryEnded(run);
      expect(view).toMatchObject({ status: "failure", error: { message }, started_at: null });
      expect(JSON.parse(got[0]?.body ?? "{}")).toMatchObject({
        run_id: run.runId,
        status: "failure",
        error: { message },
      });
      expect(await endsReported(run)).toEqual(["failure"]); // the host never had it
    },
  );
});

describe("the host's report (callback)", () => {
  it("of an unknown run is null and writes nothing", async () => {
    const run = newRun(newApp());
    expect(await shardOfRun(run).report(run.runId, { status: "success" })).toBeNull();
    expect(await viewOf(run)).toBeNull();
  });

  it("of a run still queued here (its 202 was lost) is taken: running, then its end", async () => {
    const app = newApp();
    fakeHost(app, () => busy);
    const run = newRun(app);
    await accept(run);
    const shard = shardOfRun(run);
    expect(await shard.report(run.runId, { status: "running", startedAt: Date.now() })).toEqual({
      status: "running",
    });
    expect(await shard.report(run.runId, { status: "failure", error: { message: "x" } })).toEqual({
      status: "failure",
    });
    expect(await viewOf(run)).toMatchObject({ status: "failure", error: { message: "x" } });
  });
});
