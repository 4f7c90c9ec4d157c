import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verifyWebhook } from "../webhooks/index.mjs";
import { client, sleeper } from "./apps.ts";
import { type Json, json, newHome, type Runlet, removeHome, startRunlet } from "./harness.ts";
import { type Receiver, startReceiver } from "./receiver.ts";
import { kill9, pidOf, serving } from "./supervision.ts";

// What a client that retries gets, through the real components (`runlet start`, a real
// receiver on loopback): a submission sent again with its Idempotency-Key is the same run, and
// a webhook delivery that failed can be sent again. The app has one replica, and its function
// answers the run ids its process has started, so it counts its own calls.

describe("retried submissions and redelivered webhooks, end to end", () => {
  let runlet: Runlet;
  let home: string;
  let receiver: Receiver;
  let api: ReturnType<typeof client>;

  const url = (path: string) => `${runlet.local.apiUrl}/v4/${runlet.local.projectId}${path}`;
  const call = (path: string, init: { key?: string; body?: string; secret?: string } = {}) =>
    fetch(url(path), {
      method: "POST",
      headers: {
        authorization: `Bearer ${runlet.local.token}`,
        "content-type": "application/json",
        ...(init.key ? { "idempotency-key": init.key } : {}),
        ...(init.secret ? { "x-webhook-secret": init.secret } : {}),
      },
      body: init.body ?? "{}",
    });
  /** The run ids the function's process has started, asked by a call without a key. */
  const seen = async (): Promise<string[]> => (await json(await call("/counter/run"))).result.seen;

  beforeAll(async () => {
    home = await newHome();
    [runlet, receiver] = await Promise.all([
      startRunlet(home, undefined, { RUNLET_WEBHOOK_RETRY_DELAYS_MS: "1000,8000" }),
      startReceiver(),
    ]);
    api = client(runlet);
    await api.deploy(
      sleeper(['name = "counter"', 'runtime = "managed"', "[scaling]", "max_replicas = 1"]),
    );
  });

  afterAll(async () => {
    await runlet?.stop();
    await receiver?.close();
    await removeHome(home);
  });

  it("starts one run for an async submission sent again, and one for 20 concurrent duplicates", async () => {
    const first = await call("/counter/run?async=true", { key: "order-7", body: '{"n":7}' });
    expect(first.status).toBe(202);
    const runId = (await json(first)).run_id as string;
    const again = await call("/counter/run?async=true", { key: "order-7", body: '{"n":7}' });
    expect(again.status).toBe(202);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.headers.get("x-request-id")).toBe(runId);
    expect(await json(again)).toEqual({ run_id: runId });

    const burst = await Promise.all(
      Array.from({ length: 20 }, () =>
        call("/counter/run?async=true", { key: "burst", body: '{"n":8}' }),
      ),
    );
    const ids = new Set(await Promise.all(burst.map(async (r) => (await json(r)).run_id)));
    expect(ids.size).toBe(1);
    const burstId = [...ids][0] as string;
    for (const id of [runId, burstId])
      await api.viewWhen("counter", id, (v) => v.status === "success");

    const started = await seen();
    expect(started.filter((id) => id === runId || id === burstId).sort()).toEqual(
      [runId, burstId].sort(),
    );
    expect(started).toHaveLength(3); // the two runs and the call that asked

    const other = await call("/counter/run?async=true", { key: "order-7", body: '{"n":9}' });
    expect(other.status).toBe(422);
    expect((await json(other)).message).toMatch(/different request/);
  });

  it("answers a sync call sent again with the first answer, without running it again", async () => {
    const before = (await seen()).length;
    const first = await call("/counter/run", { key: "sync-7" });
    expect(first.status).toBe(200);
    const answer = await json(first);
    const again = await call("/counter/run", { key: "sync-7" });
    expect(again.status).toBe(200);
    expect(await json(again)).toEqual(answer);
    expect(again.headers.get("x-request-id")).toBe(first.headers.get("x-request-id"));
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect((await seen()).length).toBe(before + 2); // the keyed call once, and this one
  });

  it("sends a delivery that failed three times again: signed when asked, same body and X-Request-Id; the view and the index show it", async () => {
    receiver.script("/flaky", [404, 404, 404]);
    const hook = encodeURIComponent(`${receiver.url}/flaky`);
    const res = await call(`/counter/run?async=true&webhookEndpoint=${hook}`);
    const runId = (await json(res)).run_id as string;
    const failed = await api.viewWhen("counter", runId, (v) => v.webhook?.state === "failed");
    expect(failed.webhook.attempts).toHaveLength(3);

    const secret = "whsec_again";
    const redelivered = await call(`/counter/runs/${runId}/deliveries`, { secret });
    expect(redelivered.status).toBe(202);
    expect(redelivered.headers.get("x-request-id")).toBe(runId);
    expect((await json(redelivered)).webhook).toMatchObject({ delivery: 2, state: "pending" });

    const [firstTry, , , resent] = await receiver.waitFor("/flaky", 4);
    expect(resent?.body).toBe(firstTry?.body);
    expect(resent?.headers["x-request-id"]).toBe(runId);
    const check = { body: resent?.body ?? "", headers: resent?.headers as Record<string, string> };
    expect(await verifyWebhook({ secret, ...check })).toMatchObject({ ok: true });

    const view = await api.viewWhen("counter", runId, (v) => v.webhook?.state === "delivered");
    expect(view.webhook).toMatchObject({ delivery: 2, signed: true, attempts: [{ status: 200 }] });
    expect(view.webhook.earlier).toMatchObject([{ delivery: 1, state: "failed", signed: false }]);
    expect(JSON.stringify(view)).not.toContain(secret);
    const indexed = async () =>
      (await api.index("counter")).find((r: Json) => r.id === runId)?.webhook?.state;
    for (let i = 0; i < 50 && (await indexed()) !== "delivered"; i++)
      await new Promise((r) => setTimeout(r, 100));
    expect(await indexed()).toBe("delivered");
  });

  it("sends a delivery's next attempt after the Worker was killed between two of them", async () => {
    // The next attempt 8 s after the second (RUNLET_WEBHOOK_RETRY_DELAYS_MS): the Worker is
    // back before it is due. Its shard set the alarm again to the same time in one commit with
    // the delete, and it never fired: the attempt waited for anything else to wake the shard.
    receiver.script("/between", [404, 404, 200]);
    const hook = encodeURIComponent(`${receiver.url}/between`);
    const submitted = await call(`/counter/run?async=true&webhookEndpoint=${hook}`);
    const runId = (await json(submitted)).run_id as string;
    await receiver.waitFor("/between", 2);
    await kill9(pidOf(runlet, "worker") as number);
    await serving(runlet, "counter", 30_000);
    const [, , third] = await receiver.waitFor("/between", 3, 30_000);
    expect(third).toBeDefined();
    const view = await api.viewWhen("counter", runId, (v) => v.webhook?.state === "delivered");
    expect(view.webhook.attempts.map((a: Json) => a.status)).toEqual([404, 404, 200]);
  }, 60_000);

  it("refuses a redelivery while a delivery is in progress (409), and of an unknown run (404)", async () => {
    receiver.script("/slow-start", [404, 200]);
    const hook = encodeURIComponent(`${receiver.url}/slow-start`);
    const res = await call(`/counter/run?async=true&webhookEndpoint=${hook}`);
    const runId = (await json(res)).run_id as string;
    await receiver.waitFor("/slow-start", 1);
    // The second attempt waits a second after the first's 404.
    const during = await call(`/counter/runs/${runId}/deliveries`);
    expect(during.status).toBe(409);
    expect((await json(during)).message).toMatch(/in progress/);
    await api.viewWhen("counter", runId, (v) => v.webhook?.state === "delivered");

    const unknown = await call(`/counter/runs/${runId.slice(0, -2)}00/deliveries`);
    expect(unknown.status).toBe(404);
  });
});
