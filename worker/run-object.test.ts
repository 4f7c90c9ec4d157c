// The run Durable Object inside workerd: its state machine, the alarm watchdog and every row of
// the webhook retry table (spec 6.4). The runtime host, the runs index and the webhook receivers
// are played by fetchMock; test/ drives the real ones.
import { env, fetchMock, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { newId } from "../common/ids.ts";
import {
  type NewRun,
  RETAIN_MS,
  type RunObject,
  type RunRecord,
  type RunView,
} from "./run-object.ts";
import { MAX_ATTEMPTS, RETRY_DELAYS_MS } from "./webhooks/deliver.ts";

const HOST = "http://host.test";
const CONTROL = "http://control.test";
const HOOKS = "https://hooks.test";
const PROJECT = "prj_do";

/** The states the runs index heard from run objects, by run id. */
const indexed = new Map<string, string[]>();

beforeAll(() => {
  fetchMock.activate();
  fetchMock.disableNetConnect();
  // The runs index takes every report (what it stores is the control plane's own tests' job).
  fetchMock
    .get(CONTROL)
    .intercept({ path: /^\/internal\/runs\//, method: "PUT" })
    .reply((opts) => {
      const runId = String(opts.path).split("/").at(-1) ?? "";
      const { status } = JSON.parse(String(opts.body)) as { status: string };
      indexed.set(runId, [...(indexed.get(runId) ?? []), status]);
      return { statusCode: 204, data: "" };
    })
    .persist();
});

/** What the run's object reported to the runs index, once `count` reports came (bounded). */
async function reportsOf(runId: string, count: number): Promise<string[]> {
  for (let i = 0; i < 100 && (indexed.get(runId)?.length ?? 0) < count; i++) await sleep(10);
  return indexed.get(runId) ?? [];
}

const newRun = (fn = "run"): NewRun => ({
  runId: newId("run"),
  project: PROJECT,
  app: "hello",
  fn,
  createdAt: Date.now(),
});

const stubOf = (runId: string) => env.RUNS.get(env.RUNS.idFromName(runId));

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The run's view once its webhook delivery has ended (bounded wait). */
async function deliveryEnded(runId: string): Promise<RunView> {
  for (let i = 0; i < 300; i++) {
    const view = await stubOf(runId).view();
    if (view?.webhook && view.webhook.state !== "pending") return view;
    await sleep(10);
  }
  throw new Error(`the delivery of ${runId} did not end`);
}

/**
 * A run's object as it would be found after an eviction: `fields` over an async run of `run`
 * ("hello"/"run"), `extra` storage keys beside it, and an alarm a minute out.
 */
async function seeded(
  run: NewRun,
  fields: Partial<RunRecord>,
  extra: Record<string, unknown> = {},
): Promise<DurableObjectStub<RunObject>> {
  const stub = stubOf(run.runId);
  const record: RunRecord = {
    run_id: run.runId,
    project: PROJECT,
    app: "hello",
    function: "run",
    async: true,
    status: "running",
    created_at: run.createdAt,
    ...fields,
  };
  await runInDurableObject(stub, async (_, state) => {
    await state.storage.put({ run: record, ...extra });
    await state.storage.setAlarm(Date.now() + 60_000);
  });
  return stub;
}

/** Waits until the run is in `status` (bounded). */
async function statusOf(runId: string, status: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    if ((await stubOf(runId).view())?.status === status) return;
    await sleep(10);
  }
  throw new Error(`run ${runId} never became ${status}`);
}

interface Received {
  path: string;
  headers: Headers;
  body: string;
}

/**
 * A receiver at `HOOKS{path}` answering `statuses` in turn ("error": a network error, a number
 * with "slow": an answer after the attempt's timeout). Records what it received.
 */
function receiver(path: string, statuses: Array<number | "error" | "slow">): Received[] {
  const received: Received[] = [];
  for (const status of statuses) {
    const scope = fetchMock.get(HOOKS).intercept({ path, method: "POST" });
    if (status === "error") {
      scope.replyWithError(new Error("connection refused"));
      continue;
    }
    const reply = scope.reply((opts) => {
      received.push({
        path,
        headers: new Headers(opts.headers as HeadersInit),
        body: String(opts.body),
      });
      return {
        statusCode: status === "slow" ? 200 : status,
        data: "",
        responseOptions: status === 302 ? { headers: { location: `${HOOKS}/moved` } } : {},
      };
    });
    if (status === "slow") reply.delay(Number(env.WEBHOOK_TIMEOUT_MS) + 300);
  }
  return received;
}

async function hmacHex(secret: string, text: string): Promise<string> {
  const key = await crypto.subtle.importKey(
    "raw",
    new TextEncoder().encode(secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(text)));
  return Array.from(mac, (b) => b.toString(16).padStart(2, "0")).join("");
}

const success = { status: "success" as const, result: { ok: 1 }, run_time_ms: 3 };

describe("webhook retry rules (spec 6.4)", () => {
  it.each([
    ["200", [200], 1, "delivered"],
    ["204", [204], 1, "delivered"],
    ["404 then 200", [404, 200], 2, "delivered"],
    ["404 three times", [404, 404, 404], 3, "failed"],
    ["400 (other 4xx: final)", [400], 1, "failed"],
    ["422 (other 4xx: final)", [422], 1, "failed"],
    ["500 (5xx: final)", [500], 1, "failed"],
    ["503 (5xx: final)", [503], 1, "failed"],
    ["302 (other non-2xx: retried, not followed)", [302, 302, 302], 3, "failed"],
    ["a network error, then 200", ["error", 200], 2, "delivered"],
    ["network errors three times", ["error", "error", "error"], 3, "failed"],
    ["a timeout, then 200", ["slow", 200], 2, "delivered"],
  ] as const)("%s", async (_, statuses, attempts, state) => {
    const run = newRun();
    const path = `/${run.runId}`;
    receiver(path, [...statuses]);
    await stubOf(run.runId).delivered(run, success, { url: `${HOOKS}${path}` });
    const view = await deliveryEnded(run.runId);
    expect(view.webhook?.state).toBe(state);
    expect(view.webhook?.attempts).toHaveLength(attempts);
    // Every attempt is recorded with its status or error, and its time.
    for (const [i, attempt] of (view.webhook?.attempts ?? []).entries()) {
      expect(attempt.attempt).toBe(i + 1);
      expect(typeof attempt.at).toBe("string");
      const sent = statuses[i];
      if (sent === "error") expect(attempt.error).toMatch(/connection refused|network/);
      else if (sent === "slow") expect(attempt.error).toMatch(/timeout/);
      else expect(attempt.status).toBe(sent);
    }
    // The caller never sees a delivery's failure: the run itself stays a success.
    expect(view.status).toBe("success");
  });

  it("waits between attempts, at most 5 s in the real configuration", async () => {
    const run = newRun();
    const path = `/${run.runId}`;
    receiver(path, [404, 404, 200]);
    await stubOf(run.runId).delivered(run, success, { url: `${HOOKS}${path}` });
    const attempts = (await deliveryEnded(run.runId)).webhook?.attempts ?? [];
    const delays = String(env.WEBHOOK_RETRY_DELAYS_MS).split(",").map(Number);
    for (let i = 1; i < attempts.length; i++) {
      const gap = Date.parse(String(attempts[i]?.at)) - Date.parse(String(attempts[i - 1]?.at));
      expect(gap).toBeGreaterThanOrEqual(delays[i - 1] ?? 0);
    }
    expect(MAX_ATTEMPTS).toBe(3);
    expect(Math.max(...RETRY_DELAYS_MS)).toBeLessThanOrEqual(5_000);
  });
});

describe("webhook delivery", () => {
  it("posts {run_id, status, result, run_time_ms, timestamp} signed per spec 6.3", async () => {
    const run = newRun();
    const path = `/${run.runId}`;
    const got = receiver(`${path}?token=abc`, [200]);
    const secret = "whsec_test_🔑";
    await stubOf(run.runId).delivered(run, success, { url: `${HOOKS}${path}?token=abc`, secret });
    await deliveryEnded(run.runId);
    const delivery = got?.[0] as Received;
    const body = JSON.parse(delivery.body);
    expect(body).toEqual({
      run_id: run.runId,
      status: "success",
      result: { ok: 1 },
      run_time_ms: 3,
      timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    expect(delivery.headers.get("content-type")).toBe("application/json");
    expect(delivery.headers.get("x-request-id")).toBe(run.runId);
    const timestamp = delivery.headers.get("x-runlet-webhook-timestamp");
    expect(Math.abs(Number(timestamp) - Date.now() / 1000)).toBeLessThan(5);
    expect(delivery.headers.get("x-runlet-webhook-signature")).toBe(
      `v1,${await hmacHex(secret, `${run.runId}.${timestamp}.${delivery.body}`)}`,
    );
  });

  it("sends no signature headers without a secret", async () => {
    const run = newRun();
    const path = `/${run.runId}`;
    const got = receiver(path, [200]);
    await stubOf(run.runId).delivered(run, success, { url: `${HOOKS}${path}` });
    await deliveryEnded(run.runId);
    expect(got[0]?.headers.get("x-runlet-webhook-signature")).toBeNull();
    expect(got[0]?.headers.get("x-runlet-webhook-timestamp")).toBeNull();
    expect(got[0]?.headers.get("x-request-id")).toBe(run.runId);
  });

  it("keeps the secret only until the delivery ends, and never shows it or the target's query", async () => {
    const run = newRun();
    const path = `/${run.runId}`;
    receiver(`${path}?token=abc`, ["error", 200]);
    const stub = stubOf(run.runId);
    await stub.delivered(run, success, { url: `${HOOKS}${path}?token=abc`, secret: "s3cr3t" });
    const view = await deliveryEnded(run.runId);
    expect(JSON.stringify(view)).not.toContain("s3cr3t");
    expect(JSON.stringify(view)).not.toContain("token=abc");
    expect(view.webhook).toMatchObject({ target: `${HOOKS}${path}`, signed: true });
    await runInDurableObject(stub, async (_, state) => {
      expect(await state.storage.get("secret")).toBeUndefined();
      expect(await state.storage.get("body")).toBeUndefined();
    });
  });

  it("resumes a delivery from the alarm after the object lost it in memory", async () => {
    const run = newRun();
    const path = `/${run.runId}`;
    const got = receiver(path, [200]);
    // Ended, its body stored, no attempt made yet.
    const stub = await seeded(
      run,
      {
        status: "success",
        finished_at: Date.now(),
        webhook: { target: `${HOOKS}${path}`, signed: false, state: "pending", attempts: [] },
      },
      { url: `${HOOKS}${path}`, body: JSON.stringify({ run_id: run.runId, status: "success" }) },
    );
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect((await deliveryEnded(run.runId)).webhook?.state).toBe("delivered");
    expect(got).toHaveLength(1);
  });
});

/** The host accepts an async run of `fn`; resolves to the headers it was sent. */
function hostAccepts(fn: string, run: NewRun) {
  let sent: Headers | undefined;
  fetchMock
    .get(HOST)
    .intercept({ path: `/internal/async/${PROJECT}/hello/${fn}`, method: "POST" })
    .reply((opts) => {
      sent = new Headers(opts.headers as HeadersInit);
      return {
        statusCode: 202,
        data: JSON.stringify({
          runId: run.runId,
          status: "running",
          startedAt: Date.now(),
          deadlineAt: Date.now() + 900_000,
        }),
      };
    });
  return () => sent;
}

/** The host takes up to `times` cancels of `run`; says how many it got so far. */
function hostCancels(run: NewRun, times: number): () => number {
  let count = 0;
  fetchMock
    .get(HOST)
    .intercept({ path: `/internal/runs/${run.runId}`, method: "DELETE" })
    .reply(() => {
      count++;
      return { statusCode: 200, data: "{}" };
    })
    .times(times);
  return () => count;
}

const CALLBACK = "https://api.test/internal/runs/x/complete";

describe("async run state machine", () => {
  it("pending, then running once the host accepts, then success on its report, then delivers", async () => {
    const run = newRun();
    const sent = hostAccepts("run", run);
    const path = `/${run.runId}`;
    const got = receiver(path, [200]);
    const stub = stubOf(run.runId);
    const payload = new TextEncoder().encode("{}").buffer as ArrayBuffer;
    const begun = await stub.begin(run, payload, CALLBACK, { url: `${HOOKS}${path}` });
    expect(begun).toMatchObject({ status: "pending", async: true });
    await statusOf(run.runId, "running");
    expect(sent()?.get("x-runlet-callback-url")).toBe(CALLBACK);
    expect(sent()?.get("authorization")).toBe(`Bearer ${env.INTERNAL_TOKEN}`);
    await stub.complete({ status: "success", result: { n: 2 }, runTimeMs: 12 });
    const view = await deliveryEnded(run.runId);
    expect(view).toMatchObject({ status: "success", async: true, run_time_ms: 12 });
    expect(view.finished_at).not.toBeNull();
    expect(JSON.parse(got[0]?.body ?? "{}")).toMatchObject({
      run_id: run.runId,
      status: "success",
      result: { n: 2 },
    });
  });

  it("a run that ends while the host holds its answer goes from pending straight to its end", async () => {
    const run = newRun();
    let sent: Headers | undefined;
    fetchMock
      .get(HOST)
      .intercept({ path: `/internal/async/${PROJECT}/hello/run`, method: "POST" })
      .reply((opts) => {
        sent = new Headers(opts.headers as HeadersInit);
        const startedAt = Date.now() - 5;
        const ended = { status: "success", result: { quick: true }, runTimeMs: 3 };
        return { statusCode: 200, data: JSON.stringify({ startedAt, ...ended }) };
      });
    const path = `/${run.runId}`;
    const got = receiver(path, [200]);
    const stub = stubOf(run.runId);
    await stub.begin(run, new ArrayBuffer(0), CALLBACK, { url: `${HOOKS}${path}` });
    const view = await deliveryEnded(run.runId);
    expect(Number(sent?.get("x-runlet-wait-ms"))).toBeGreaterThan(0);
    expect(view).toMatchObject({ status: "success", run_time_ms: 3 });
    expect(view.started_at).not.toBeNull();
    expect(JSON.parse(got[0]?.body ?? "{}")).toMatchObject({ result: { quick: true } });
    await sleep(50);
    expect(await reportsOf(run.runId, 0)).toEqual([]); // the host reports the ends it sends
  });

  it("failure with the host's message when the function fails, and delivers that", async () => {
    const run = newRun();
    hostAccepts("run", run);
    const path = `/${run.runId}`;
    const got = receiver(path, [200]);
    const stub = stubOf(run.runId);
    await stub.begin(run, new ArrayBuffer(0), CALLBACK, { url: `${HOOKS}${path}` });
    await statusOf(run.runId, "running");
    await stub.complete({ status: "failure", error: { message: "boom" }, runTimeMs: 1 });
    const view = await deliveryEnded(run.runId);
    expect(view).toMatchObject({ status: "failure", async: true, error: { message: "boom" } });
    expect(JSON.parse(got[0]?.body ?? "{}")).toMatchObject({
      status: "failure",
      error: { message: "boom" },
    });
  });

  it("failure when the host refuses the run, delivered with the host's reason", async () => {
    const run = newRun();
    fetchMock
      .get(HOST)
      .intercept({ path: `/internal/async/${PROJECT}/hello/run`, method: "POST" })
      .reply(404, { message: "app 'hello' is not deployed on this host" });
    const path = `/${run.runId}`;
    const got = receiver(path, [200]);
    const stub = stubOf(run.runId);
    await stub.begin(run, new ArrayBuffer(0), CALLBACK, { url: `${HOOKS}${path}` });
    const view = await deliveryEnded(run.runId);
    const reason = "app 'hello' is not deployed on this host";
    expect(view).toMatchObject({ status: "failure", error: { message: reason } });
    expect(JSON.parse(got[0]?.body ?? "{}")).toMatchObject({ error: { message: reason } });
    expect(await reportsOf(run.runId, 1)).toEqual(["failure"]); // the host never had it
  });

  it("DELETE cancels a running run on the host; a later report does not move it; a second cancel is 409", async () => {
    const run = newRun();
    hostAccepts("run", run);
    const deletes = hostCancels(run, 1);
    const stub = stubOf(run.runId);
    await stub.begin(run, new ArrayBuffer(0), CALLBACK);
    await statusOf(run.runId, "running");
    expect(await stub.cancel()).toMatchObject({ status: "cancelled" });
    expect(deletes()).toBe(1);
    await stub.complete({ status: "success", result: 1 });
    expect(await stub.view()).toMatchObject({ status: "cancelled" });
    expect(await reportsOf(run.runId, 1)).toEqual(["cancelled"]);
    expect(await stub.cancel()).toEqual({
      refused: { status: 409, message: `run '${run.runId}' has already ended: cancelled` },
    });
  });
});

describe("cancel before the host answered", () => {
  it("stops the run on the host once the host has accepted it", async () => {
    const run = newRun();
    fetchMock
      .get(HOST)
      .intercept({ path: `/internal/async/${PROJECT}/hello/run`, method: "POST" })
      .reply(202, JSON.stringify({ status: "running", startedAt: Date.now() }))
      .delay(100);
    const deletes = hostCancels(run, 2);
    const stub = stubOf(run.runId);
    await stub.begin(run, new ArrayBuffer(0), CALLBACK);
    expect(await stub.cancel()).toMatchObject({ status: "cancelled" });
    expect(deletes()).toBe(1); // it came before the host knew the run
    for (let i = 0; i < 100 && deletes() < 2; i++) await sleep(10);
    expect(deletes()).toBe(2);
    expect(await stub.view()).toMatchObject({ status: "cancelled" });
  });
});

describe("alarm watchdog", () => {
  const running = (run: NewRun, deadlineAt = Date.now() + 900_000) =>
    seeded(run, { started_at: run.createdAt, deadline_at: deadlineAt });

  const hostSays = (run: NewRun, status: number | "error", body: unknown = {}) => {
    const scope = fetchMock
      .get(HOST)
      .intercept({ path: `/internal/runs/${run.runId}`, method: "GET" });
    if (status === "error") scope.replyWithError(new Error("connection refused"));
    else scope.reply(status, JSON.stringify(body));
  };

  it("fails a run the host no longer knows (it restarted)", async () => {
    const run = newRun();
    const stub = await running(run);
    hostSays(run, 404, { message: "no run" });
    await runDurableObjectAlarm(stub);
    expect(await stub.view()).toMatchObject({
      status: "failure",
      error: { message: expect.stringMatching(/lost the run/) },
    });
    expect(await reportsOf(run.runId, 1)).toEqual(["failure"]); // the record decided this end
  });

  it("takes the end from the host when its report was lost", async () => {
    const run = newRun();
    const stub = await running(run);
    hostSays(run, 200, { status: "success", result: 5, runTimeMs: 4, finishedAt: Date.now() });
    await runDurableObjectAlarm(stub);
    expect(await stub.view()).toMatchObject({ status: "success", run_time_ms: 4 });
  });

  it("keeps a running run running while the host says so, and schedules the next check", async () => {
    const run = newRun();
    const stub = await running(run);
    hostSays(run, 200, { status: "running" });
    await runDurableObjectAlarm(stub);
    expect(await stub.view()).toMatchObject({ status: "running" });
    await runInDurableObject(stub, async (_, state) => {
      expect(await state.storage.getAlarm()).toBeGreaterThan(Date.now());
    });
  });

  it("gives a run up after the host left three checks in a row unanswered", async () => {
    const run = newRun();
    const stub = await running(run);
    for (let i = 0; i < 3; i++) {
      expect(await stub.view()).toMatchObject({ status: "running" });
      hostSays(run, "error");
      await runDurableObjectAlarm(stub);
    }
    expect(await stub.view()).toMatchObject({
      status: "failure",
      error: { message: expect.stringMatching(/stopped answering/) },
    });
  });

  it("fails a run past its deadline even if the host still says running", async () => {
    const run = newRun();
    const stub = await running(run, Date.now() - 61_000);
    hostSays(run, 200, { status: "running" });
    await runDurableObjectAlarm(stub);
    expect(await stub.view()).toMatchObject({
      status: "failure",
      error: { message: expect.stringMatching(/response_grace_period/) },
    });
  });

  it("fails a run that was never handed to the host (its object went away mid-begin)", async () => {
    const run = newRun();
    const stub = await seeded(run, { status: "pending" });
    await runDurableObjectAlarm(stub);
    expect(await stub.view()).toMatchObject({ status: "failure" });
  });

  it("forgets an ended run's record after the retention period", async () => {
    const run = newRun();
    const stub = await seeded(run, { status: "success", finished_at: Date.now() - RETAIN_MS - 1 });
    await runDurableObjectAlarm(stub);
    expect(await stub.view()).toBeNull();
  });
});
