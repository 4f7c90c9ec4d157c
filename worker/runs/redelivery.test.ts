/**
 * A finished run's webhook sent again (worker/runs/redelivery.ts): after a delivery that failed
 * three times, a redelivery to the same receiver with the same body and X-Request-Id, signed
 * when asked; to a new target; 409 while a delivery is in progress, for a run not ended or
 * without a webhook; the body kept sealed, never in the clear once a delivery ended.
 */
import { beforeAll, describe, expect, it } from "vitest";
import type { RunView } from "../../common/protocol/run-view.ts";
import {
  APP_ID,
  accept,
  deliveryEnded,
  ended,
  fakeHost,
  HOOKS,
  hmacHex,
  newApp,
  newRun,
  type Received,
  receiver,
  rowOf,
  shardOfRun,
  started,
  startFakes,
  viewWhen,
} from "./test-support.ts";
import type { NewRun, Refusal } from "./types.ts";

beforeAll(startFakes);

/** An async run of a new app that ends `{ok: 1}` at once, its webhook at HOOKS/{run id}. */
async function runWithWebhook(statuses: Array<number | "error" | "slow">) {
  const run = newRun(newApp());
  const got = receiver(`/${run.runId}`, statuses);
  fakeHost(run.app, () => ended({ result: { ok: 1 }, runTimeMs: 3 }));
  expect(await accept(run, { webhook: { url: `${HOOKS}/${run.runId}` } })).toBeUndefined();
  return { run, got };
}

const redeliver = (run: NewRun, to: { url?: string; secret?: string } = {}) =>
  shardOfRun(run).redeliver(run.runId, to, APP_ID);

/** The next delivery's end: its `delivery` number is `n`. */
const deliveryNumbered = (run: NewRun, n: number) =>
  viewWhen(
    run,
    `delivery ${n} ended`,
    (v) => v.webhook?.delivery === n && v.webhook.state !== "pending",
  );

describe("redelivery", () => {
  it("sends a delivery that failed three times again: same body and X-Request-Id, signed when asked; the view shows both", async () => {
    const { run, got } = await runWithWebhook([404, 404, 404]);
    const first = await deliveryEnded(run);
    expect(first.webhook).toMatchObject({ state: "failed", signed: false });
    expect(first.webhook?.delivery).toBeUndefined();

    const again = receiver(`/${run.runId}`, [200]);
    const secret = "whsec_again";
    const answer = (await redeliver(run, { secret })) as RunView;
    expect(answer.webhook).toMatchObject({ state: "pending", signed: true, delivery: 2 });
    const view = await deliveryNumbered(run, 2);
    expect(view.webhook).toMatchObject({ state: "delivered", target: `${HOOKS}/${run.runId}` });
    expect(view.webhook?.attempts).toHaveLength(1);
    expect(view.webhook?.earlier).toEqual([
      expect.objectContaining({ delivery: 1, state: "failed", signed: false }),
    ]);
    expect(view.webhook?.earlier?.[0]?.attempts.map((a) => a.status)).toEqual([404, 404, 404]);

    const sent = again[0] as Received;
    expect(sent.body).toBe((got[0] as Received).body);
    expect(sent.headers.get("x-request-id")).toBe(run.runId);
    const timestamp = sent.headers.get("x-runlet-webhook-timestamp");
    expect(sent.headers.get("x-runlet-webhook-signature")).toBe(
      `v1,${await hmacHex(secret, `${run.runId}.${timestamp}.${sent.body}`)}`,
    );
    // Neither the secret nor the body is kept in the clear once the delivery ended.
    const row = await rowOf(run);
    expect(row).toMatchObject({ hook_secret: null, hook_body: null, hook_url: null });
    const sealed = new TextDecoder().decode(row?.hook_sealed as ArrayBuffer);
    expect(sealed).not.toContain('"ok"');
    expect(sealed).not.toContain(run.runId);
  });

  it("sends it to a new target, unsigned without a secret; a third delivery numbers on", async () => {
    const { run } = await runWithWebhook([200]);
    await deliveryEnded(run);
    const moved = receiver(`/moved/${run.runId}?token=abc`, [200]);
    await redeliver(run, { url: `${HOOKS}/moved/${run.runId}?token=abc` });
    const second = await deliveryNumbered(run, 2);
    expect(second.webhook).toMatchObject({ target: `${HOOKS}/moved/${run.runId}`, signed: false });
    expect(JSON.stringify(second)).not.toContain("token=abc");
    expect(moved[0]?.headers.get("x-runlet-webhook-signature")).toBeNull();

    const back = receiver(`/${run.runId}`, [200]);
    await redeliver(run);
    const third = await deliveryNumbered(run, 3);
    expect(third.webhook?.earlier?.map((d) => [d.delivery, d.target])).toEqual([
      [1, `${HOOKS}/${run.runId}`],
      [2, `${HOOKS}/moved/${run.runId}`],
    ]);
    expect(back).toHaveLength(1);
  });

  it("answers 409 while a delivery is in progress, and once its redelivery is", async () => {
    const { run } = await runWithWebhook(["slow", 200]);
    await viewWhen(run, "the run ended", (v) => v.status === "success");
    const during = (await redeliver(run)) as Refusal;
    expect(during.refused).toMatchObject({ status: 409 });
    expect(during.refused.message).toMatch(/in progress/);
    await deliveryEnded(run, 10_000);

    receiver(`/${run.runId}`, ["slow", 200]);
    const [one, two] = await Promise.all([redeliver(run), redeliver(run)]);
    const refused = [one, two].filter((a) => a && "refused" in a) as Refusal[];
    expect(refused).toHaveLength(1);
    expect(refused[0]?.refused.status).toBe(409);
    await deliveryNumbered(run, 2);
  });

  it("sends and sends again a delivery larger than one SQLite value (kept in parts), leaving no secret", async () => {
    const run = newRun(newApp());
    const got = receiver(`/${run.runId}?token=abc`, [200]);
    const result = "x".repeat(2_500_000);
    const outcome = { status: "success" as const, result, run_time_ms: 3 };
    const webhook = { url: `${HOOKS}/${run.runId}?token=abc`, secret: "s3cret" };
    await shardOfRun(run).record(run, outcome, webhook);
    expect((await deliveryEnded(run)).webhook?.state).toBe("delivered");
    expect(JSON.parse((got[0] as Received).body).result).toBe(result);
    expect(await rowOf(run)).toMatchObject({ hook_secret: null, hook_url: null, hook_body: null });
    const again = receiver(`/${run.runId}?token=abc`, [200]);
    await redeliver(run);
    await deliveryNumbered(run, 2);
    expect(again[0]?.body).toBe(got[0]?.body);
  });

  it("refuses a run not ended or without a webhook (409); an unknown run is null", async () => {
    const app = newApp();
    const running = newRun(app);
    fakeHost(app, () => started());
    await accept(running, { webhook: { url: `${HOOKS}/${running.runId}` } });
    await viewWhen(running, "running", (v) => v.status === "running");
    expect(((await redeliver(running)) as Refusal).refused.message).toMatch(/has not ended/);

    const plain = newRun(newApp());
    fakeHost(plain.app, () => ended({ result: 1 }));
    await accept(plain);
    await viewWhen(plain, "ended", (v) => v.status === "success");
    const none = (await redeliver(plain)) as Refusal;
    expect(none.refused).toEqual({ status: 409, message: expect.stringMatching(/had no webhook/) });

    expect(await redeliver(newRun(newApp()))).toBeNull();
  });

  it("a run of an earlier app of the name (deleted, deployed again since): the new app's callers cannot send its webhook again", async () => {
    const run = { ...newRun(newApp()), appId: "app_earlier" };
    receiver(`/${run.runId}`, [200]);
    fakeHost(run.app, () => ended({ result: 1 }));
    await accept(run, { webhook: { url: `${HOOKS}/${run.runId}` } });
    await deliveryEnded(run);
    const refused = (await shardOfRun(run).redeliver(run.runId, {}, "app_since")) as Refusal;
    expect(refused.refused).toEqual({
      status: 409,
      message: expect.stringMatching(/belongs to an earlier app .* not sent its webhook again$/),
    });
    expect((await shardOfRun(run).view(run.runId))?.webhook?.delivery).toBeUndefined();
  });
});
