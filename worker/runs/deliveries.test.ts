/**
 * Webhook deliveries driven by a shard (worker/runs/deliveries.ts): every row of the retry
 * table (docs/api.md, "Webhook delivery"), for sync runs (`record`) and async runs (ended by
 * the host); the delivery's body, headers and `v1,` HMAC-SHA256 signature (checked here with WebCrypto); the secret and the
 * target's query never shown and dropped once the delivery ends; a delivery resumed by the
 * alarm. Pauses are WEBHOOK_RETRY_DELAYS_MS "30,30" and attempts time out after 300 ms here.
 */
import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { MAX_ATTEMPTS, RETRY_DELAYS_MS, sendingAttempt } from "../webhooks/deliver.ts";
import {
  accept,
  deliveryEnded,
  ended,
  fakeHost,
  HOOKS,
  hmacHex,
  lastReportOf,
  newApp,
  newRun,
  PROJECT,
  type Received,
  receiver,
  restart,
  rowOf,
  type Shard,
  shardNamed,
  shardOfRun,
  sql,
  startFakes,
  until,
  viewOf,
  viewWhen,
} from "./test-support.ts";
import type { NewRun, WebhookRequest } from "./types.ts";

beforeAll(startFakes);

/** Inserts a row as a shard would have left it (the columns given; the others default). */
function seedRow(shard: Shard, row: Record<string, SqlStorageValue>): Promise<void> {
  const names = Object.keys(row);
  return runInDurableObject(shard, (_, state) => {
    state.storage.sql.exec(
      `INSERT INTO runs (${names.join(", ")}) VALUES (${names.map(() => "?").join(", ")})`,
      ...Object.values(row),
    );
  });
}

type Kind = "sync" | "async";
const KINDS: Kind[] = ["sync", "async"];

/** Ends `run` with `{ok: 1}` in 3 ms and hands `webhook` its delivery, as a sync or async run. */
async function runTo(kind: Kind, run: NewRun, webhook: WebhookRequest): Promise<void> {
  if (kind === "sync") {
    const outcome = { status: "success" as const, result: { ok: 1 }, run_time_ms: 3 };
    await shardOfRun(run).record(run, outcome, webhook);
  } else {
    fakeHost(run.app, () => ended({ result: { ok: 1 }, runTimeMs: 3 }));
    expect(await accept(run, { webhook })).toBeUndefined();
  }
}

describe.each(KINDS)("%s run: the retry rules", (kind) => {
  it.each([
    ["200", [200], "delivered"],
    ["204", [204], "delivered"],
    ["404 then 200", [404, 200], "delivered"],
    ["404 three times", [404, 404, 404], "failed"],
    ["400 (other 4xx: final)", [400], "failed"],
    ["422 (other 4xx: final)", [422], "failed"],
    ["500 (5xx: final)", [500], "failed"],
    ["503 (5xx: final)", [503], "failed"],
    ["302 (other non-2xx: retried, not followed)", [302, 302, 302], "failed"],
    ["a network error, then 200", ["error", 200], "delivered"],
    ["network errors three times", ["error", "error", "error"], "failed"],
    ["a timeout, then 200", ["slow", 200], "delivered"],
  ] as const)("%s", async (_, statuses, state) => {
    const run = newRun(newApp());
    const got = receiver(`/${run.runId}`, [...statuses]);
    await runTo(kind, run, { url: `${HOOKS}/${run.runId}` });
    const view = await deliveryEnded(run);
    expect(view.webhook?.state).toBe(state);
    expect(view.webhook?.attempts).toHaveLength(statuses.length);
    for (const [i, attempt] of (view.webhook?.attempts ?? []).entries()) {
      expect(attempt.attempt).toBe(i + 1);
      expect(Date.parse(attempt.at)).not.toBeNaN();
      const sent = statuses[i];
      if (sent === "error") expect(attempt.error).toMatch(/connection refused|network/);
      else if (sent === "slow")
        expect(attempt.error).toBe(`timeout after ${env.WEBHOOK_TIMEOUT_MS} ms`);
      else expect(attempt.status).toBe(sent);
    }
    expect(got.length).toBe(statuses.filter((s) => s !== "error").length);
    // The caller never sees a delivery's failure: the run itself stays a success.
    expect(view.status).toBe("success");
  });

  it("waits between attempts (at most 5 s apart in the real configuration)", async () => {
    const run = newRun(newApp());
    const got = receiver(`/${run.runId}`, [404, 404, 200]);
    await runTo(kind, run, { url: `${HOOKS}/${run.runId}` });
    expect((await deliveryEnded(run)).webhook?.state).toBe("delivered");
    const delays = String(env.WEBHOOK_RETRY_DELAYS_MS).split(",").map(Number);
    for (let i = 1; i < got.length; i++)
      expect((got[i] as Received).at - (got[i - 1] as Received).at).toBeGreaterThanOrEqual(
        delays[i - 1] ?? 0,
      );
    expect(MAX_ATTEMPTS).toBe(3);
    expect(Math.max(...RETRY_DELAYS_MS)).toBeLessThanOrEqual(5_000);
  });

  it.each([
    // A first attempt that times out: the delivery ends after the shard's first report of the
    // run (pending), so its end must be sent as news of its own.
    ["delivered", ["slow", 200]],
    ["failed", ["slow", 404, 404]],
  ] as const)("tells the runs index how the delivery ended: %s", async (state, statuses) => {
    const run = newRun(newApp());
    receiver(`/${run.runId}`, [...statuses]);
    await runTo(kind, run, { url: `${HOOKS}/${run.runId}` });
    await deliveryEnded(run);
    const report = await lastReportOf(
      run,
      "the delivery's end",
      (r) => (r.webhook as { state?: string } | undefined)?.state === state,
    );
    expect(report).toMatchObject({
      async: kind === "async",
      status: "success",
      webhook: { state, attempts: statuses.length },
    });
  });
});

describe.each(KINDS)("%s run: the delivery", (kind) => {
  it("posts {run_id, status, result, run_time_ms, timestamp} signed v1,HMAC-SHA256(run_id.timestamp.body)", async () => {
    const run = newRun(newApp());
    const got = receiver(`/${run.runId}?token=abc`, [200]);
    const secret = "whsec_test_🔑";
    await runTo(kind, run, { url: `${HOOKS}/${run.runId}?token=abc`, secret });
    const view = await deliveryEnded(run);
    const delivery = got[0] as Received;
    expect(JSON.parse(delivery.body)).toEqual({
      run_id: run.runId,
      status: "success",
      result: { ok: 1 },
      run_time_ms: 3,
      timestamp: view.finished_at,
    });
    expect(delivery.headers.get("content-type")).toBe("application/json");
    expect(delivery.headers.get("x-request-id")).toBe(run.runId);
    const timestamp = delivery.headers.get("x-runlet-webhook-timestamp");
    expect(Math.abs(Number(timestamp) - delivery.at / 1000)).toBeLessThan(2);
    expect(delivery.headers.get("x-runlet-webhook-signature")).toBe(
      `v1,${await hmacHex(secret, `${run.runId}.${timestamp}.${delivery.body}`)}`,
    );
  });

  it("sends no signature headers without a secret", async () => {
    const run = newRun(newApp());
    const got = receiver(`/${run.runId}`, [200]);
    await runTo(kind, run, { url: `${HOOKS}/${run.runId}` });
    expect((await deliveryEnded(run)).webhook).toMatchObject({ signed: false });
    expect(got[0]?.headers.get("x-runlet-webhook-signature")).toBeNull();
    expect(got[0]?.headers.get("x-runlet-webhook-timestamp")).toBeNull();
    expect(got[0]?.headers.get("x-request-id")).toBe(run.runId);
  });

  it("never shows the secret or the target's query, and drops them once the delivery ended", async () => {
    const run = newRun(newApp());
    receiver(`/${run.runId}?token=abc`, ["error", 200]);
    await runTo(kind, run, { url: `${HOOKS}/${run.runId}?token=abc`, secret: "s3cr3t" });
    const pending = await viewWhen(run, "an attempt made", (v) => !!v.webhook?.attempts.length);
    const view = await deliveryEnded(run);
    for (const shown of [pending, view]) {
      expect(JSON.stringify(shown)).not.toMatch(/s3cr3t|token=abc/);
      expect(shown.webhook).toMatchObject({ target: `${HOOKS}/${run.runId}`, signed: true });
    }
    expect(await rowOf(run)).toMatchObject({
      hook_url: null,
      hook_secret: null,
      hook_body: null,
      payload: null,
    });
  });
});

/** An ended async run whose delivery is due, as a shard leaves it. */
function deliveringRow(id: string, app: string, now: number): Record<string, SqlStorageValue> {
  return {
    id,
    project: PROJECT,
    app,
    fn: "run",
    async: 1,
    status: "success",
    created_at: now - 3_000,
    finished_at: now - 2_500,
    hook_target: `${HOOKS}/${id}`,
    hook_signed: 0,
    hook_state: "pending",
    hook_url: `${HOOKS}/${id}`,
    hook_body: JSON.stringify({ run_id: id, status: "success", result: 1 }),
    due_at: now - 1,
  };
}

/**
 * Seeds run `id` of `app` as a shard left it, its delivery due after `attempts`, and runs the
 * alarm as the shard set it (here before its time): the view once the delivery ended.
 */
async function resumed(app: string, id: string, now: number, attempts: unknown[]) {
  const shard = shardNamed(app);
  await seedRow(shard, { ...deliveringRow(id, app, now), hook_attempts: JSON.stringify(attempts) });
  await runInDurableObject(shard, (_, state) => state.storage.setAlarm(now + 60_000));
  expect(await runDurableObjectAlarm(shard)).toBe(true);
  return deliveryEnded({ runId: id, project: PROJECT, app, fn: "run", createdAt: now });
}

describe("a delivery the shard's instance lost (eviction)", () => {
  it.each([
    ["after a pause (attempt 1 was a 404)", [{ attempt: 1, status: 404, verdict: "retry" }], 2],
    ["after an attempt cut short", [], 1],
  ])("is resumed by the alarm %s", async (_, before, attempts) => {
    const app = newApp();
    const id = newRun(app).runId;
    const got = receiver(`/${id}`, [200]);
    const now = Date.now();
    const past = before.map((a) => ({ ...a, at: now - 2_000, duration_ms: 5 }));
    const view = await resumed(app, id, now, past);
    expect(view.webhook).toMatchObject({ state: "delivered" });
    expect(view.webhook?.attempts).toHaveLength(attempts);
    expect(JSON.parse(got[0]?.body ?? "{}")).toEqual({ run_id: id, status: "success", result: 1 });
  });
});

describe("an attempt cut short by the end of the shard's instance (a crash, an eviction)", () => {
  const CUT_SHORT = expect.stringContaining("cut short: the Worker stopped");

  it("is on record before it is sent, hidden while under way, and counts among the three", async () => {
    const run = newRun(newApp());
    const got = receiver(`/${run.runId}`, ["slow", 200]);
    await runTo("async", run, { url: `${HOOKS}/${run.runId}` });
    // The first attempt is under way (its receiver holds it): its record is already written.
    const sending = await until("the attempt under way", async () => {
      const attempts = JSON.parse(String((await rowOf(run))?.hook_attempts ?? "[]"));
      return attempts.length > 0 ? attempts : undefined;
    });
    expect(sending).toMatchObject([{ attempt: 1, sending: true }]);
    expect((await viewOf(run))?.webhook?.attempts).toEqual([]);
    // The instance ends mid-attempt; once its time has passed, the alarm goes on from the record.
    const shard = await restart(run.app);
    await sql(shard, "UPDATE runs SET due_at = ? WHERE id = ?", Date.now() - 1, run.runId);
    expect(await runDurableObjectAlarm(shard)).toBe(true);
    const view = await deliveryEnded(run);
    expect(view.webhook?.state).toBe("delivered");
    expect(view.webhook?.attempts).toEqual([
      { attempt: 1, at: expect.any(String), error: CUT_SHORT, duration_ms: 0, verdict: "retry" },
      expect.objectContaining({ attempt: 2, status: 200, verdict: "delivered" }),
    ]);
    expect(got).toHaveLength(2);
  });

  it("ends the delivery failed when it was the third: no fourth attempt", async () => {
    const app = newApp();
    const id = newRun(app).runId;
    const got = receiver(`/${id}`, [200]);
    const now = Date.now();
    const attempts = [1, 2].map((attempt) => {
      const at = now - 3_000 + attempt * 500;
      return { attempt, at, status: 404, duration_ms: 5, verdict: "retry" };
    });
    const view = await resumed(app, id, now, [...attempts, sendingAttempt(3, now - 1_000)]);
    expect(view.webhook?.state).toBe("failed");
    expect(view.webhook?.attempts.map((a) => [a.attempt, a.status ?? a.error, a.verdict])).toEqual([
      [1, 404, "retry"],
      [2, 404, "retry"],
      [3, CUT_SHORT, "final"],
    ]);
    expect(got).toEqual([]);
    // The runs index hears three attempts.
    const seeded = { runId: id, project: PROJECT, app, fn: "run", createdAt: now };
    const report = await lastReportOf(seeded, "its delivery's end", (r) => !!r.webhook);
    expect(report.webhook).toEqual({ state: "failed", attempts: 3 });
  });
});
