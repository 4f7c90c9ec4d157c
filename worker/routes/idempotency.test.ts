// Idempotency-Key on run calls (worker/idempotency.ts, worker/runs/keys.ts), through SELF.fetch
// with the host played by fetchMock: a replayed async submission is the same run, a replayed
// sync call the first answer, and the refusals (400, 409, 422).
import { fetchMock, runDurableObjectAlarm, runInDurableObject, SELF } from "cloudflare:test";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { keyOfHeader } from "../idempotency.ts";
import { SHARDS } from "../runs/limits.ts";
import type { RunShard } from "../runs/shard.ts";
import { shardOf } from "../runs/shards.ts";
import { restart, shardNamed, sleep, until } from "../runs/test-support.ts";
import {
  appIsDeployed,
  CONTROL,
  call,
  expectUpstreamsUsed,
  HOST,
  PROJECT,
  setUpUpstreams,
  sign,
} from "./test-support.ts";

beforeAll(setUpUpstreams);
afterEach(expectUpstreamsUsed);

/** A caller of `app` (deployed): its headers, with `key` as its Idempotency-Key. */
async function callerOf(app: string) {
  appIsDeployed(app);
  const authorization = `Bearer ${await sign()}`;
  return (key?: string): Record<string, string> =>
    key === undefined ? { authorization } : { authorization, "idempotency-key": key };
}

/** The host takes hand-overs of `app`'s async runs (202 running), counting them. */
function hostTakes(app: string) {
  const taken: string[] = [];
  fetchMock
    .get(HOST)
    .intercept({ path: (p) => p.startsWith(`/internal/async/${PROJECT}/${app}/`), method: "POST" })
    .reply(({ path }) => {
      taken.push(path);
      const run = { status: "running", startedAt: Date.now(), deadlineAt: Date.now() + 60_000 };
      return { statusCode: 202, data: JSON.stringify(run) };
    })
    .persist();
  return taken;
}

const replayedOf = (res: Response) => res.headers.get("idempotent-replayed");

/**
 * The host's answer to the next sync call of `idem-sync` (an app of this file's own: shards of
 * another file's apps made here would be stale there).
 */
function hostAnswers(status: number, body: unknown, delayMs?: number) {
  const answer = fetchMock
    .get(HOST)
    .intercept({ path: `/internal/invoke/${PROJECT}/idem-sync/run`, method: "POST" })
    .reply(status, body as object);
  if (delayMs) answer.delay(delayMs);
}

describe("Idempotency-Key: async runs", () => {
  it("answers a retried submission with the first run's id, marked replayed; one run reaches the host", async () => {
    const headers = await callerOf("idem-async");
    const taken = hostTakes("idem-async");
    const path = `/v4/${PROJECT}/idem-async/run?async=true`;
    const first = await call(path, { headers: headers("order-1"), body: '{"n":1}' });
    expect(first.res.status).toBe(202);
    expect(replayedOf(first.res)).toBeNull();
    const runId = first.body.run_id as string;
    expect(first.res.headers.get("x-request-id")).toBe(runId);

    const again = await call(path, { headers: headers("order-1"), body: '{"n":1}' });
    expect(again.res.status).toBe(202);
    expect(again.body).toEqual({ run_id: runId });
    expect(again.res.headers.get("x-request-id")).toBe(runId);
    expect(replayedOf(again.res)).toBe("true");

    // The draft's form, a Structured Fields string, is the same key.
    const quoted = await call(path, { headers: headers('"order-1"'), body: '{"n":1}' });
    expect(quoted.body).toEqual({ run_id: runId });
    await until("the hand-over", () => taken.length === 1);
    await sleep(100);
    expect(taken).toHaveLength(1);
  });

  it("makes one run of 20 concurrent duplicates", async () => {
    const headers = await callerOf("idem-burst");
    const taken = hostTakes("idem-burst");
    const answers = await Promise.all(
      Array.from({ length: 20 }, () =>
        call(`/v4/${PROJECT}/idem-burst/run?async=true`, { headers: headers("burst"), body: "[]" }),
      ),
    );
    expect(answers.map((a) => a.res.status)).toEqual(Array(20).fill(202));
    expect(new Set(answers.map((a) => a.body.run_id)).size).toBe(1);
    expect(answers.filter((a) => replayedOf(a.res) === null)).toHaveLength(1);
    await until("the hand-over", () => taken.length === 1);
    await sleep(100);
    expect(taken).toHaveLength(1);
  });

  it("takes an async body larger than one SQLite value (kept in parts) with a key, and hands it over whole", async () => {
    const headers = await callerOf("idem-big");
    const sent: number[] = [];
    fetchMock
      .get(HOST)
      .intercept({
        path: (p) => p.startsWith(`/internal/async/${PROJECT}/idem-big/`),
        method: "POST",
      })
      .reply(({ body }) => {
        sent.push(String(body).length);
        return {
          statusCode: 202,
          data: JSON.stringify({ status: "running", startedAt: Date.now() }),
        };
      });
    const path = `/v4/${PROJECT}/idem-big/run?async=true`;
    const big = JSON.stringify("x".repeat(3_000_000));
    const first = await call(path, { headers: headers("big"), body: big });
    expect(first.res.status).toBe(202);
    const again = await call(path, { headers: headers("big"), body: big });
    expect(again.body.run_id).toBe(first.body.run_id);
    await until("the hand-over", () => sent.length === 1);
    expect(sent).toEqual([big.length]);
    const k = shardOf(first.body.run_id as string);
    const parts = () =>
      runInDurableObject(
        shardNamed("idem-big", k, PROJECT),
        (_: RunShard, state) =>
          state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM run_parts").one().n,
      );
    // The body goes once the run has started.
    await until("the parts dropped", async () => (await parts()) === 0);
  });

  it("refuses the same key with another body, query or method (422); another function has its own keys", async () => {
    const headers = await callerOf("idem-other");
    hostTakes("idem-other");
    const base = `/v4/${PROJECT}/idem-other`;
    const first = await call(`${base}/run?async=true`, { headers: headers("k"), body: '{"a":1}' });
    expect(first.res.status).toBe(202);
    for (const [path, body] of [
      [`${base}/run?async=true`, '{"a":2}'],
      [`${base}/run?async=true&webhookEndpoint=https://hooks.test/x`, '{"a":1}'],
      [`${base}/run`, '{"a":1}'],
    ] as const) {
      const other = await call(path, { headers: headers("k"), body });
      expect(other.res.status).toBe(422);
      expect(other.body.message).toMatch(/different request/);
      // It names the key's run, not a new id no run has (runlet status of it was a 404).
      expect(other.body.run_id).toBe(first.body.run_id);
      expect(other.res.headers.get("x-request-id")).toBe(first.body.run_id);
    }
    const elsewhere = await call(`${base}/other?async=true`, { headers: headers("k"), body: "{}" });
    expect(elsewhere.res.status).toBe(202);
    expect(elsewhere.body.run_id).not.toBe(first.body.run_id);
    expect(replayedOf(elsewhere.res)).toBeNull();
  });

  it("takes the same query in another order as the same request (a client building it from a map)", async () => {
    const headers = await callerOf("idem-order");
    hostTakes("idem-order");
    const base = `/v4/${PROJECT}/idem-order/run`;
    const hook = encodeURIComponent("https://hooks.test/order");
    const first = await call(`${base}?webhookEndpoint=${hook}&async=true`, {
      headers: headers("order"),
      body: "{}",
    });
    expect(first.res.status).toBe(202);
    const again = await call(`${base}?async=true&webhookEndpoint=${hook}`, {
      headers: headers("order"),
      body: "{}",
    });
    expect(again.res.status).toBe(202); // it was 422 "used with a different request"
    expect(again.body.run_id).toBe(first.body.run_id);
    expect(replayedOf(again.res)).toBe("true");
  });

  it("starts a new run once the key is past its 24 hours", async () => {
    const headers = await callerOf("idem-old");
    hostTakes("idem-old");
    const path = `/v4/${PROJECT}/idem-old/run?async=true`;
    const first = await call(path, { headers: headers("daily"), body: "{}" });
    const runId = first.body.run_id as string;
    const before = await call(path, { headers: headers("daily"), body: "{}" });
    expect(before.body.run_id).toBe(runId);
    const stored = await runInDurableObject(
      shardNamed("idem-old", shardOf(runId), PROJECT),
      (_: RunShard, state) => {
        const row = state.storage.sql
          .exec<{ expires_at: number }>("SELECT expires_at FROM idempotency_keys")
          .one();
        // What 24 hours later looks like to the shard.
        state.storage.sql.exec("UPDATE idempotency_keys SET expires_at = ?", Date.now() - 1);
        return row.expires_at - Date.now();
      },
    );
    expect(stored).toBeGreaterThan(24 * 60 * 60_000 - 60_000);
    const later = await call(path, { headers: headers("daily"), body: "{}" });
    expect(later.res.status).toBe(202);
    expect(later.body.run_id).not.toBe(runId);
    expect(replayedOf(later.res)).toBeNull();
  });

  it("removes a key past its 24 hours at the shard's alarm", async () => {
    const headers = await callerOf("idem-gone");
    hostTakes("idem-gone");
    const path = `/v4/${PROJECT}/idem-gone/run?async=true`;
    const runId = (await call(path, { headers: headers("gone"), body: "{}" })).body
      .run_id as string;
    const k = shardOf(runId);
    const keys = (state: DurableObjectState) =>
      state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM idempotency_keys").one().n;
    await runInDurableObject(shardNamed("idem-gone", k, PROJECT), (_: RunShard, state) => {
      state.storage.sql.exec("UPDATE idempotency_keys SET expires_at = ?", Date.now() - 1);
    });
    // The next instance reads the soonest expiry from its rows, as one 24 hours later would.
    const shard = await restart("idem-gone", k, PROJECT);
    await until("the alarm removed the key", async () => {
      await runDurableObjectAlarm(shard);
      return (await runInDurableObject(shard, (_: RunShard, state) => keys(state))) === 0;
    });
  });

  it("keeps a key in the shard its hash picks, whatever the shard of a run without a key", async () => {
    const headers = await callerOf("idem-shard");
    hostTakes("idem-shard");
    const shards = new Set<number>();
    for (let i = 0; i < 8; i++) {
      const path = `/v4/${PROJECT}/idem-shard/run?async=true`;
      const a = await call(path, { headers: headers(`same-${i}`), body: "{}" });
      const b = await call(path, { headers: headers(`same-${i}`), body: "{}" });
      expect(b.body.run_id).toBe(a.body.run_id);
      shards.add(shardOf(a.body.run_id as string));
    }
    expect([...shards].every((k) => k >= 0 && k < SHARDS)).toBe(true);
    expect(shards.size).toBeGreaterThan(1);
  });
});

describe("Idempotency-Key: sync runs", () => {
  it("answers a retry with the first answer: status, body and X-Request-Id, marked replayed", async () => {
    const headers = await callerOf("idem-sync");
    hostAnswers(200, { ok: true, result: { greeting: "Hi" }, run_time_ms: 2 });
    const path = `/v4/${PROJECT}/idem-sync/run`;
    const first = await call(path, { headers: headers("sync-1"), body: '{"name":"Ada"}' });
    expect(first.res.status).toBe(200);
    const runId = first.res.headers.get("x-request-id");
    // The host is not asked again: it has no answer left for a second call.
    const again = await call(path, { headers: headers("sync-1"), body: '{"name":"Ada"}' });
    expect(again.res.status).toBe(200);
    expect(again.body).toEqual(first.body);
    expect(again.body.run_id).toBe(runId);
    expect(again.res.headers.get("x-request-id")).toBe(runId);
    expect(again.res.headers.get("content-type")).toMatch(/application\/json/);
    expect(replayedOf(again.res)).toBe("true");
  });

  it("runs again for an app deleted and deployed again under its name: another app", async () => {
    const headers = await callerOf("idem-sync");
    const path = `/v4/${PROJECT}/idem-sync/run`;
    hostAnswers(200, { ok: true, result: "the first app", run_time_ms: 1 });
    const first = await call(path, { headers: headers("reborn"), body: "{}" });
    expect(first.body.result).toBe("the first app");
    appIsDeployed("idem-sync", "managed", "app_2"); // its new id, for a new token's lookup
    const authorization = `Bearer ${await sign()}`;
    hostAnswers(200, { ok: true, result: "the second app", run_time_ms: 1 });
    const again = await call(path, {
      headers: { authorization, "idempotency-key": "reborn" },
      body: "{}",
    });
    expect(again.body.result).toBe("the second app");
    expect(replayedOf(again.res)).toBeNull();
  });

  it("replays an answer without a body (204) as one", async () => {
    const headers = await callerOf("idem-sync");
    hostAnswers(200, { ok: true, result: { status_code: 204 }, run_time_ms: 1 });
    const path = `/v4/${PROJECT}/idem-sync/run`;
    const send = () =>
      SELF.fetch(`https://api.test${path}`, {
        method: "POST",
        headers: headers("empty"),
        body: "{}",
      });
    const first = await send();
    expect([first.status, await first.text()]).toEqual([204, ""]);
    const again = await send();
    expect([again.status, await again.text()]).toEqual([204, ""]);
    expect(replayedOf(again)).toBe("true");
  });

  it("keeps a function's thrown error as the answer (500)", async () => {
    const headers = await callerOf("idem-sync");
    hostAnswers(200, { ok: false, error: { message: "boom" }, run_time_ms: 1 });
    const path = `/v4/${PROJECT}/idem-sync/run`;
    const first = await call(path, { headers: headers("sync-err") });
    expect(first.res.status).toBe(500);
    const again = await call(path, { headers: headers("sync-err") });
    expect(again.res.status).toBe(500);
    expect(again.body).toEqual(first.body);
  });

  it("answers 409 while the first call still runs, then its answer", async () => {
    const headers = await callerOf("idem-sync");
    hostAnswers(200, { ok: true, result: "slow", run_time_ms: 400 }, 800); // HOST_ANSWER_MS is 1 s here
    const path = `/v4/${PROJECT}/idem-sync/run`;
    const first = call(path, { headers: headers("sync-slow") });
    // At the host, so its key is taken: a fixed 100 ms was not always enough on a loaded machine.
    const atHost = () =>
      fetchMock
        .pendingInterceptors()
        .some((i) => i.path === `/internal/invoke/${PROJECT}/idem-sync/run`);
    await until("the first call at the host", () => !atHost());
    const during = await call(path, { headers: headers("sync-slow") });
    expect(during.res.status).toBe(409);
    expect(during.body.message).toMatch(
      /^the run of this Idempotency-Key \(run_\w{26}\) has not answered yet: try again once it has \(a sync run can be read by its id once it has been on its replica for a second, or has answered\)$/,
    );
    const done = await first;
    expect(done.res.status).toBe(200);
    // The refusal named the running run, as its answer does: a script polls that one.
    expect(during.body.run_id).toBe(done.body.run_id);
    expect(during.res.headers.get("x-request-id")).toBe(done.body.run_id);
    const after = await call(path, { headers: headers("sync-slow") });
    expect(after.body).toEqual(done.body);
  });

  it("frees the key when the host refused before running anything (429): the retry runs", async () => {
    const headers = await callerOf("idem-sync");
    hostAnswers(429, { message: "the app is at capacity", code: "too_many_requests" });
    const path = `/v4/${PROJECT}/idem-sync/run`;
    const first = await call(path, { headers: headers("sync-retry") });
    expect(first.res.status).toBe(429);
    hostAnswers(200, { ok: true, result: 2, run_time_ms: 1 });
    const retry = await until("the key freed", async () => {
      const r = await call(path, { headers: headers("sync-retry") });
      return r.res.status === 409 ? undefined : r;
    });
    expect(retry.res.status).toBe(200);
    expect(retry.body.result).toBe(2);
    expect(replayedOf(retry.res)).toBeNull();
  });

  /** The key's row, in whichever shard its hash picked: its lease made to have passed (`lapse`). */
  async function leaseLapsed(lapse = true): Promise<string> {
    for (let k = 0; k < SHARDS; k++) {
      const runId = await runInDurableObject(
        shardNamed("idem-sync", k, PROJECT),
        (_: RunShard, state) => {
          const sql = state.storage.sql;
          const row = sql
            .exec<{ run_id: string }>(
              "SELECT run_id FROM idempotency_keys WHERE answer_status IS NULL",
            )
            .toArray()[0];
          if (lapse)
            sql.exec("UPDATE idempotency_keys SET lease_until = ? WHERE answer_status IS NULL", 1);
          return row?.run_id;
        },
      );
      if (runId) return runId;
    }
    throw new Error("no key without its answer");
  }

  /** The runs index's answer for `runId`: ended `ago` ms ago, or none (404). */
  function indexHas(runId: string, ago?: number) {
    const scope = fetchMock
      .get(CONTROL)
      .intercept({ path: `/v2/projects/${PROJECT}/runs/${runId}` });
    if (ago === undefined) {
      scope.reply(404, { message: "not found" });
      return undefined;
    }
    const finishedAt = new Date(Date.now() - ago).toISOString();
    const run = { id: runId, app: "idem-sync", function: "run", async: false, status: "success" };
    scope.reply(200, { ...run, createdAt: finishedAt, finishedAt, runTimeMs: 5 });
    return finishedAt;
  }

  /** A call of idem-sync with `key`, its host answering after 700 ms, 200 ms under way. */
  async function underWay(key: string) {
    const headers = (await callerOf("idem-sync"))(key);
    hostAnswers(200, { ok: true, result: "first", run_time_ms: 5 }, 700);
    const path = `/v4/${PROJECT}/idem-sync/run`;
    const first = call(path, { headers });
    await sleep(200);
    return { path, headers, first };
  }

  it("says a run whose answer was lost ran, rather than 409 until its lease passes and then run it again", async () => {
    // The stack was killed mid-call; its host finished the call and the runs index has it.
    const { path, headers, first } = await underWay("sync-lost");
    const runId = await leaseLapsed();
    const finishedAt = indexHas(runId, 120_000);
    const again = await call(path, { headers });
    expect(again.res.status).toBe(409);
    expect(again.body.message).toBe(
      `the run of this Idempotency-Key (${runId}) ended success at ${finishedAt}, but its answer was not kept (the call was cut off where Runlet answers it): read the run instead (GET …/runs/${runId}); the key does not run it again`,
    );
    expect(again.body.run_id).toBe(runId);
    expect((await first).res.status).toBe(200); // the host was called once (fetchMock)
  });

  it("says a run that ended a moment ago has ended, not that it has not answered yet", async () => {
    // The Worker was killed mid-call; its host ended the run, which the runs index has: a key
    // sent again within the minute said "has not answered yet: try again once it has".
    const { path, headers, first } = await underWay("sync-ended");
    const runId = await leaseLapsed(false);
    const finishedAt = indexHas(runId, 5_000);
    const again = await call(path, { headers });
    expect((await first).res.status).toBe(200);
    expect(again.res.status).toBe(409);
    expect(again.body.message).toBe(
      `the run of this Idempotency-Key (${runId}) ended success at ${finishedAt}; its answer is not kept yet: it is on its way to the first call's caller (send the key again in a moment for it), or it was lost with a Worker that stopped mid-call: read the run instead (GET …/runs/${runId}); the key does not run it again`,
    );
    expect(again.body.run_id).toBe(runId);
  });

  it("runs a lapsed key's call again when the runs index has no trace of its run", async () => {
    const { path, headers, first } = await underWay("sync-never");
    indexHas(await leaseLapsed());
    hostAnswers(200, { ok: true, result: "second", run_time_ms: 5 });
    const again = await call(path, { headers });
    expect(again.res.status).toBe(200);
    expect(again.body.result).toBe("second");
    await first;
  });

  it("keeps a timeout (504) as the answer: the function may have run, a retry does not run it again", async () => {
    const headers = await callerOf("idem-sync");
    hostAnswers(504, {
      message: "the call exceeded the synchronous limit",
      code: "gateway_timeout",
    });
    const path = `/v4/${PROJECT}/idem-sync/run`;
    const first = await call(path, { headers: headers("sync-504") });
    expect(first.res.status).toBe(504);
    // The host has no answer left: a second call reaching it would be a 502.
    const again = await call(path, { headers: headers("sync-504") });
    expect(again.res.status).toBe(504);
    expect(again.body).toEqual(first.body);
    expect(again.body.run_id).toBe(first.res.headers.get("x-request-id"));
    expect(replayedOf(again.res)).toBe("true");
  });

  it("replays a custom app's answer (status, headers, body) and sends the app the body it was given", async () => {
    appIsDeployed("idem-web", "custom");
    const authorization = `Bearer ${await sign()}`;
    const sent: string[] = [];
    fetchMock
      .get(HOST)
      .intercept({ path: `/internal/http/${PROJECT}/idem-web/items?x=1`, method: "PUT" })
      .reply(({ body }) => {
        sent.push(String(body));
        return {
          statusCode: 201,
          data: "made",
          responseOptions: { headers: { "content-type": "text/plain", "x-app": "yes" } },
        };
      });
    const put = () =>
      SELF.fetch(`https://api.test/v4/${PROJECT}/idem-web/items?x=1`, {
        method: "PUT",
        headers: { authorization, "idempotency-key": "put-1" },
        body: "payload",
      });
    const first = await put();
    expect([first.status, await first.text()]).toEqual([201, "made"]);
    const again = await until("the answer kept", async () => {
      const r = await put();
      return r.status === 409 ? undefined : r;
    });
    expect([again.status, await again.text()]).toEqual([201, "made"]);
    expect(again.headers.get("x-app")).toBe("yes");
    expect(again.headers.get("x-request-id")).toBe(first.headers.get("x-request-id"));
    expect(replayedOf(again)).toBe("true");
    expect(sent).toEqual(["payload"]);
  });

  it("refuses a malformed key with 400 {message}", async () => {
    const headers = await callerOf("idem-sync");
    for (const key of ['""', '"open', "x".repeat(256), "caf\u00e9", '"a\\b"']) {
      const { res, body } = await call(`/v4/${PROJECT}/idem-sync/run`, { headers: headers(key) });
      expect(res.status, key).toBe(400);
      expect(body.message).toMatch(/Idempotency-Key is not valid/);
    }
  });

  it("refuses two key lines, which arrive joined by a comma, with 400", async () => {
    const headers = new Headers((await callerOf("idem-sync"))());
    headers.append("idempotency-key", "order-7");
    headers.append("idempotency-key", "order-8");
    const { res, body } = await call(`/v4/${PROJECT}/idem-sync/run`, { headers });
    expect(res.status).toBe(400);
    expect(body.message).toMatch(/bare key may not hold ","/);
    // A quoted key may hold one: it is one Structured Fields string.
    expect(keyOfHeader('"a, b"')).toBe("a, b");
    expect(() => keyOfHeader('"a", "b"')).toThrow(/one quoted string/);
  });
});
