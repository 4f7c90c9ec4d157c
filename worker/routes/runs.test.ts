// The run routes through SELF.fetch (worker/routes/run.ts, runs.ts): async runs queued in their
// shard (202, the run's URL, DELETE, a full queue), sync runs with a webhook, and the internal
// routes (the host's callback, the wake-up).
import { env, fetchMock, listDurableObjectIds, SELF } from "cloudflare:test";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { MAX_QUEUED_RUNS, SHARDS } from "../runs/limits.ts";
import { newRunId, shardName, shardOf } from "../runs/shards.ts";
import { fillQueue, shardNamed, sql, until } from "../runs/test-support.ts";
import {
  appIsDeployed,
  CONTROL,
  call,
  expectUpstreamsUsed,
  HOST,
  hostAnswers,
  PROJECT,
  setUpUpstreams,
  sign,
} from "./test-support.ts";

/** How a body refused as a function's input goes on: what to send instead. */
const INSTEAD =
  "a managed function's input is a JSON body: send a file in it as a base64 string, or deploy a custom app, which gets the body's bytes as they are";

beforeAll(setUpUpstreams);
afterEach(expectUpstreamsUsed);

/** The host's answer to `app`'s next hand-over: 202 started. Records what it was sent. */
function hostTakesNext(app = "hello", route: "async" | "async-http" = "async") {
  const sent: Array<{ method: string; path: string; headers: Headers; body: string }> = [];
  fetchMock
    .get(HOST)
    .intercept({
      path: (p) => p.startsWith(`/internal/${route}/${PROJECT}/${app}/`),
      method: () => true,
    })
    .reply(({ method, path, headers, body }) => {
      sent.push({ method, path, headers: new Headers(headers as HeadersInit), body: String(body) });
      const run = { status: "running", startedAt: Date.now(), deadlineAt: Date.now() + 60_000 };
      return { statusCode: 202, data: JSON.stringify(run) };
    });
  return sent;
}

const runUrl = (runId: string, app = "hello") =>
  `https://api.test/v4/${PROJECT}/${app}/runs/${runId}`;

/** A POST to an internal route, with `token` as its bearer token. */
const internal = (path: string, token?: string, body?: string) =>
  SELF.fetch(`https://api.test${path}`, {
    method: "POST",
    headers: token ? { authorization: `Bearer ${token}` } : {},
    body,
  });

/** The run's state through its URL, once it is `status` (bounded). */
const stateOnce = (runId: string, headers: HeadersInit, status: string, app = "hello") =>
  until(`${runId} ${status}`, async () => {
    const view = (await (await SELF.fetch(runUrl(runId, app), { headers })).json()) as {
      status?: string;
    };
    return view.status === status && view;
  });

/** An async run of `app` (deployed, its host starting it), submitted with a new token. */
async function asyncRun(app = "hello", body = "{}") {
  const headers = { authorization: `Bearer ${await sign()}` };
  appIsDeployed(app);
  const sent = hostTakesNext(app);
  const { res, body: answer } = await call(`/v4/${PROJECT}/${app}/run?async=true`, {
    headers,
    body,
  });
  return { headers, sent, res, answer, runId: answer.run_id as string };
}

describe("run API: async runs, run state and webhooks", () => {
  it("answers async=true with 202 and exactly {run_id}; the run is in the shard its id names, and its URL follows it to its end", async () => {
    const { headers, sent, res, answer, runId } = await asyncRun("hello", '{"n":1}');
    expect(res.status).toBe(202);
    expect(answer).toEqual({ run_id: res.headers.get("X-Request-Id") });
    const holds = async (k: number) =>
      (await sql(shardNamed("hello", k, PROJECT), "SELECT id FROM runs WHERE id = ?", runId))
        .length;
    for (let k = 0; k < SHARDS; k++) expect(await holds(k)).toBe(k === shardOf(runId) ? 1 : 0);
    const running = await stateOnce(runId, headers, "running");
    expect(running).toMatchObject({ run_id: runId, async: true });
    expect(sent[0]?.body).toBe('{"n":1}');
    const callback = `/internal/apps/${PROJECT}/hello/runs/${runId}/complete`;
    // The configured WORKER_URL, not the address the caller used (a Host header it chooses).
    expect(sent[0]?.headers.get("x-runlet-callback-url")).toBe(`https://worker.test${callback}`);
    // The app it was accepted for: a host whose app of that name is a later one (deleted and
    // deployed again meanwhile) refuses it rather than run it on another app's code.
    expect(sent[0]?.headers.get("x-runlet-app-id")).toBe("app_1");

    const report = JSON.stringify({ status: "success", result: 1, runTimeMs: 5 });
    const reported = await internal(callback, env.INTERNAL_TOKEN, report);
    expect(reported.status).toBe(200);
    expect(await reported.json()).toEqual({ status: "success" });
    const done = await SELF.fetch(runUrl(runId), { headers });
    expect(done.headers.get("X-Request-Id")).toBe(runId);
    expect(await done.json()).toMatchObject({ status: "success", run_time_ms: 5 });
    // HEAD is the GET without its body: its X-Request-Id is the run's too (it was a new id).
    const head = await SELF.fetch(runUrl(runId), { method: "HEAD", headers });
    expect([head.status, head.headers.get("X-Request-Id")]).toEqual([200, runId]);

    // Not a run of another app (the runs index says whose it is); an ended run is not cancelled.
    appIsDeployed("other");
    fetchMock
      .get(CONTROL)
      .intercept({ path: `/v2/projects/${PROJECT}/runs/${runId}` })
      .reply(200, { id: runId, app: "hello", function: "run", async: true, status: "success" });
    expect((await SELF.fetch(runUrl(runId, "other"), { headers })).status).toBe(404);
    const cancel = await SELF.fetch(runUrl(runId), { method: "DELETE", headers });
    expect(cancel.status).toBe(409);
    // A cancel's onlyIfQueued is true or false; anything else is refused before the run is looked at.
    const unclear = await SELF.fetch(`${runUrl(runId)}?onlyIfQueued=yes`, {
      method: "DELETE",
      headers,
    });
    expect(unclear.status).toBe(400);
    expect(await unclear.json()).toMatchObject({
      message: "onlyIfQueued must be 'true' or 'false', got 'yes'",
    });
  });

  it("takes the host's callback only with the internal token; an unknown run is 404, a body not JSON 400", async () => {
    const path = `/internal/apps/${PROJECT}/hello/runs/${newRunId()}/complete`;
    const report = JSON.stringify({ status: "success" });
    for (const token of [undefined, "wrong"]) {
      const res = await internal(path, token, report);
      expect(res.status).toBe(401);
      expect(await res.json()).toEqual({
        message: "internal route: invalid token",
        code: "unauthorized",
      });
    }
    const unknown = await internal(path, env.INTERNAL_TOKEN, report);
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ message: "no such run", code: "not_found" });
    expect((await internal(path, env.INTERNAL_TOKEN, "not json")).status).toBe(400);
  });

  it("refuses a callback that is not the host's run (common/protocol/host.ts): 400, and the run is untouched", async () => {
    const { headers, runId } = await asyncRun();
    await stateOnce(runId, headers, "running");
    const callback = `/internal/apps/${PROJECT}/hello/runs/${runId}/complete`;
    for (const body of [
      { status: "finished" },
      { status: "success", runTimeMs: "5" },
      { status: "failure", error: "boom" },
    ]) {
      const res = await internal(callback, env.INTERNAL_TOKEN, JSON.stringify(body));
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({ code: "bad_request" });
    }
    const view = await SELF.fetch(runUrl(runId), { headers });
    expect(await view.json()).toMatchObject({ status: "running", run_time_ms: null });
  });

  it("DELETE cancels a running async run, stops it on the host, and answers its view; again is 409", async () => {
    const { headers, runId } = await asyncRun();
    await stateOnce(runId, headers, "running");
    let stopped = 0;
    fetchMock
      .get(HOST)
      .intercept({ path: `/internal/runs/${runId}`, method: "DELETE" })
      .reply(() => {
        stopped++;
        return { statusCode: 200, data: "{}" };
      });
    const res = await SELF.fetch(runUrl(runId), { method: "DELETE", headers });
    expect(res.status).toBe(200);
    expect(res.headers.get("X-Request-Id")).toBe(runId);
    expect(await res.json()).toMatchObject({ run_id: runId, status: "cancelled" });
    expect(stopped).toBe(1);
    const again = await SELF.fetch(runUrl(runId), { method: "DELETE", headers });
    expect(again.status).toBe(409);
    expect(await again.json()).toMatchObject({
      message: `run '${runId}' has already ended: cancelled`,
    });
  });

  it("GET of a run its shard does not hold asks the runs index: a sync run's row, or 404 {message}", async () => {
    const headers = { authorization: `Bearer ${await sign()}` };
    appIsDeployed();
    const [known, unknown] = [newRunId(), newRunId()];
    const index = (runId: string) =>
      fetchMock.get(CONTROL).intercept({ path: `/v2/projects/${PROJECT}/runs/${runId}` });
    const at = "2026-01-02T03:04:05.000Z";
    // It waited 2.6 s for a replica, then ran 2 ms: it started at its end less its run time.
    const [started, finished] = ["2026-01-02T03:04:07.598Z", "2026-01-02T03:04:07.600Z"];
    index(known).reply(200, {
      ...{ id: known, app: "hello", function: "run", async: false, status: "success" },
      ...{ createdAt: at, finishedAt: finished, runTimeMs: 2 },
    });
    index(unknown).reply(404, { message: "not found" });
    const found = await SELF.fetch(runUrl(known), { headers });
    expect(await found.json()).toEqual({
      ...{ run_id: known, project: PROJECT, app: "hello", function: "run", async: false },
      ...{ status: "success", created_at: at, started_at: started, finished_at: finished },
      run_time_ms: 2,
      host: null,
    });
    const missing = await SELF.fetch(runUrl(unknown), { headers });
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({
      message: `no run '${unknown}' of app 'hello' in project '${PROJECT}' (a sync run without a webhook is found once it has been on its replica for a second, or has answered)`,
      code: "not_found",
      run_id: unknown,
    });
  });

  it("GET of a run whose app was deleted since shows its shard's view once the runs index has it; another id keeps the app's 404, and DELETE is refused", async () => {
    const { headers, runId } = await asyncRun("gone");
    await stateOnce(runId, headers, "running", "gone");
    const callback = `/internal/apps/${PROJECT}/gone/runs/${runId}/complete`;
    const report = JSON.stringify({ status: "success", result: 1, runTimeMs: 5 });
    expect((await internal(callback, env.INTERNAL_TOKEN, report)).status).toBe(200);

    // `runlet apps delete gone`: the control plane has no such app now; the index has its run.
    const later = { authorization: `Bearer ${await sign()}` };
    const gone = `app 'gone' is not deployed in project '${PROJECT}'`;
    fetchMock
      .get(CONTROL)
      .intercept({ path: `/v2/projects/${PROJECT}/apps/gone` })
      .reply(404, { message: gone, code: "not_found" })
      .times(3);
    const unknown = newRunId();
    const index = (id: string) =>
      fetchMock.get(CONTROL).intercept({ path: `/v2/projects/${PROJECT}/runs/${id}` });
    index(runId).reply(200, {
      id: runId,
      app: "gone",
      function: "run",
      async: true,
      status: "success",
    });
    index(unknown).reply(404, { message: "not found" });

    const view = await SELF.fetch(runUrl(runId, "gone"), { headers: later });
    expect(view.status).toBe(200);
    // The shard's view (its run time), not the index's row alone.
    expect(await view.json()).toMatchObject({ run_id: runId, status: "success", run_time_ms: 5 });
    const missing = await SELF.fetch(runUrl(unknown, "gone"), { headers: later });
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ message: gone });
    const cancel = await SELF.fetch(runUrl(runId, "gone"), { method: "DELETE", headers: later });
    expect(cancel.status).toBe(404);
    expect(await cancel.json()).toMatchObject({ message: gone });
  });

  it("DELETE or redelivery of an async run the runs index has as running, and no shard holds, says so: 409, never 'has already ended: running'", async () => {
    // An older checkout's first run store (one object per run): its runs were not carried over.
    const headers = { authorization: `Bearer ${await sign()}` };
    appIsDeployed();
    const runId = newRunId();
    fetchMock
      .get(CONTROL)
      .intercept({ path: `/v2/projects/${PROJECT}/runs/${runId}` })
      .reply(200, { id: runId, app: "hello", function: "run", async: true, status: "running" })
      .times(2);
    const message = `run '${runId}' is not in the run store, which an older checkout's runs were not carried over to (the runs index last had it running): it can no longer change`;
    const cancel = await SELF.fetch(runUrl(runId), { method: "DELETE", headers });
    expect(cancel.status).toBe(409);
    expect(await cancel.json()).toMatchObject({ message });
    const again = await SELF.fetch(`${runUrl(runId)}/deliveries`, { method: "POST", headers });
    expect(again.status).toBe(409);
    expect(await again.json()).toMatchObject({ message });
  });

  it("redelivery takes no body fields: a typo such as {urll} is a 400 naming it, not ignored; none or {} is fine", async () => {
    const { headers, runId } = await asyncRun();
    const redeliver = (body?: string) =>
      SELF.fetch(`${runUrl(runId)}/deliveries`, { method: "POST", headers, body });
    const typo = await redeliver(JSON.stringify({ urll: "https://example.com/h", secret: "s" }));
    expect(typo.status).toBe(400);
    expect(await typo.json()).toMatchObject({
      message:
        "POST …/deliveries takes no body fields (got 'urll', 'secret'): give another target as ?webhookEndpoint=<url-encoded URL> and a secret as the X-Webhook-Secret header",
    });
    for (const body of ["[1]", "not json", '"x"']) {
      const res = await redeliver(body);
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({
        message: expect.stringMatching(/^POST …\/deliveries takes no body: send none or \{\}/),
      });
    }
    const huge = await redeliver(`{"x":"${"y".repeat(64 * 1024)}"}`);
    expect(huge.status).toBe(413);
    // Read and refused before the run is looked at: then the run's own answer (it has no webhook).
    for (const body of [undefined, "", "{}", " { } "]) {
      const res = await redeliver(body);
      expect(res.status).toBe(409);
      expect(await res.json()).toMatchObject({ message: expect.stringMatching(/webhook/) });
    }
  });

  it("a cancel or a redelivery with a query parameter it does not take is a 400 naming it: a typo no longer cancels a running run, nor sends to the first target", async () => {
    const { headers, runId } = await asyncRun();
    await stateOnce(runId, headers, "running");
    const cancel = await SELF.fetch(`${runUrl(runId)}?onlyIfQueud=true`, {
      method: "DELETE",
      headers,
    });
    expect(cancel.status).toBe(400);
    expect(await cancel.json()).toMatchObject({
      message:
        "unknown query parameter 'onlyIfQueud' (did you mean 'onlyIfQueued'?): DELETE of a run takes onlyIfQueued",
    });
    const redeliver = await SELF.fetch(
      `${runUrl(runId)}/deliveries?webhookEndpont=${encodeURIComponent("https://example.com/new")}`,
      { method: "POST", headers },
    );
    expect(redeliver.status).toBe(400);
    expect(await redeliver.json()).toMatchObject({
      message:
        "unknown query parameter 'webhookEndpont' (did you mean 'webhookEndpoint'?): POST …/deliveries takes webhookEndpoint",
    });
    // Nothing changed: the run still runs, and the right parameter is taken.
    await stateOnce(runId, headers, "running");
    const queuedOnly = await SELF.fetch(`${runUrl(runId)}?onlyIfQueued=true`, {
      method: "DELETE",
      headers,
    });
    expect(queuedOnly.status).toBe(409);
  });

  it("a GET of a run with a query parameter is a 400 naming it: it takes none, and ?wiat=1 no longer answers as if it had waited", async () => {
    const { headers, runId } = await asyncRun();
    await stateOnce(runId, headers, "running");
    for (const query of ["wiat=1", "wait=1", "onlyIfQueued=true"]) {
      const res = await SELF.fetch(`${runUrl(runId)}?${query}`, { headers });
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({
        message: `unknown query parameter '${query.split("=")[0]}': GET of a run takes no query parameters; it answers the run's state as it is now (ask again until it has ended)`,
      });
    }
    // Without one it answers as before.
    await stateOnce(runId, headers, "running");
  });

  it("GET of an id that names no shard (its last character past SHARDS) creates no Durable Object", async () => {
    const headers = { authorization: `Bearer ${await sign()}` };
    appIsDeployed();
    const runId = `${newRunId().slice(0, -1)}z`;
    fetchMock
      .get(CONTROL)
      .intercept({ path: `/v2/projects/${PROJECT}/runs/${runId}` })
      .reply(404, { message: "not found" });
    expect((await SELF.fetch(runUrl(runId), { headers })).status).toBe(404);
    const nowhere = env.RUNS.idFromName(shardName(PROJECT, "hello", 31));
    expect((await listDurableObjectIds(env.RUNS)).some((id) => id.equals(nowhere))).toBe(false);
  });

  it("GET or DELETE under runs/ of something that is not a run id: 404 saying what one is", async () => {
    const headers = { authorization: `Bearer ${await sign()}` };
    appIsDeployed(); // asked once, then known for 10 s
    for (const [method, id] of [
      ["GET", "run_xyz"],
      ["DELETE", "run_xyz"],
      ["GET", "x".repeat(2000)],
    ] as const) {
      const res = await SELF.fetch(runUrl(id), { method, headers });
      expect(res.status).toBe(404);
      expect(await res.json()).toMatchObject({
        code: "not_found",
        message: `no run '${id.slice(0, 60)}': a run id is 'run_' and 26 characters`,
      });
    }
  });

  it("a run's path under a method it does not take: 405 with Allow naming its methods (a managed app)", async () => {
    const headers = { authorization: `Bearer ${await sign()}` };
    appIsDeployed(); // asked once, then known for 10 s
    const runId = newRunId();
    const path = `/v4/${PROJECT}/hello/runs/${runId}`;
    for (const [method, at, allow] of [
      ["POST", path, "GET, HEAD, DELETE"],
      ["PUT", path, "GET, HEAD, DELETE"],
      ["GET", `${path}/deliveries`, "POST"],
      ["DELETE", `${path}/deliveries`, "POST"],
    ] as const) {
      const res = await SELF.fetch(`https://api.test${at}`, { method, headers });
      const named = allow.replace(", HEAD", "");
      expect([method, at, res.status, res.headers.get("allow"), await res.json()]).toEqual([
        method,
        at,
        405,
        allow,
        {
          message: `${method} is not allowed on ${at}; it takes ${named}`,
          code: "method_not_allowed",
          run_id: expect.stringMatching(/^run_/),
        },
      ]);
    }
  });

  it("a run's path under another method on a custom app is the app's own request", async () => {
    const authorization = `Bearer ${await sign()}`;
    appIsDeployed("web", "custom");
    const sent = hostTakesNext("web", "async-http");
    const runId = newRunId();
    const { res } = await call(`/v4/${PROJECT}/web/runs/${runId}?async=true`, {
      method: "PUT",
      headers: { authorization },
      body: "x",
    });
    expect(res.status).toBe(202);
    await until("the hand-over", () => sent.length === 1);
    expect(sent[0]).toMatchObject({
      method: "PUT",
      path: `/internal/async-http/${PROJECT}/web/runs/${runId}`,
    });
  });

  it("a path the Worker serves under another method is 405 with Allow; one it does not serve 404", async () => {
    const openapi = await SELF.fetch("https://api.test/v4/openapi.json", { method: "POST" });
    expect([openapi.status, openapi.headers.get("allow"), await openapi.json()]).toEqual([
      405,
      "GET, HEAD",
      {
        message: "POST is not allowed on /v4/openapi.json; it takes GET",
        code: "method_not_allowed",
      },
    ]);
    const nowhere = await SELF.fetch("https://api.test/v4/nowhere", { method: "POST" });
    expect([nowhere.status, nowhere.headers.get("allow")]).toEqual([404, null]);
  });

  it("answers 429 {message, run_id} once the app's queue is full", async () => {
    const headers = { authorization: `Bearer ${await sign()}` };
    appIsDeployed("full");
    for (let k = 0; k < SHARDS; k++)
      await fillQueue("full", k, Math.ceil(MAX_QUEUED_RUNS / SHARDS), PROJECT);
    const { res, body } = await call(`/v4/${PROJECT}/full/run?async=true`, { headers });
    expect(res.status).toBe(429);
    expect(body).toEqual({
      message: "app 'full' has too many runs waiting (about 100,000): try again once some have run",
      code: "too_many_requests",
      run_id: res.headers.get("X-Request-Id"),
    });
  });

  it("hands a custom app's async request over as it came, less the caller's token, the secret, Expect and Runlet's parameters", async () => {
    const authorization = `Bearer ${await sign()}`;
    appIsDeployed("web", "custom");
    const sent = hostTakesNext("web", "async-http");
    const hook = encodeURIComponent("https://hooks.test/web");
    const { res } = await call(
      `/v4/${PROJECT}/web/items/7?x=1&async=true&webhookEndpoint=${hook}&y=%2F`,
      {
        method: "PUT",
        headers: {
          authorization,
          "x-webhook-secret": "k",
          "x-custom": "yes",
          expect: "100-continue",
        },
        body: "hello",
      },
    );
    expect(res.status).toBe(202);
    await until("the hand-over", () => sent.length === 1);
    const path = `/internal/async-http/${PROJECT}/web/items/7?x=1&y=%2F`;
    expect(sent[0]).toMatchObject({ method: "PUT", path, body: "hello" });
    expect(sent[0]?.headers.get("x-custom")).toBe("yes");
    expect(sent[0]?.headers.get("x-webhook-secret")).toBeNull();
    // The caller's Expect is the Worker's business: a host would answer 100 Continue to it.
    expect(sent[0]?.headers.get("expect")).toBeNull();
    expect(sent[0]?.headers.get("authorization")).toBe(`Bearer ${env.INTERNAL_TOKEN}`);
  });
  it("refuses a bad or repeated async, a bad or private webhookEndpoint, an empty secret and an async body not JSON with 400", async () => {
    const headers = { authorization: `Bearer ${await sign()}` };
    appIsDeployed();
    for (const query of [
      "async=1",
      "async=true&async=false",
      "webhookEndpoint=",
      "webhookEndpoint=ftp%3A%2F%2Fexample.com%2F",
      "webhookEndpoint=http%3A%2F%2F127.0.0.1%3A9%2Fhook",
    ]) {
      const { res, body } = await call(`/v4/${PROJECT}/hello/run?${query}`, { headers });
      expect({ query, status: res.status }).toEqual({ query, status: 400 });
      expect(body.run_id).toBe(res.headers.get("X-Request-Id"));
    }
    const twice = await call(
      `/v4/${PROJECT}/hello/run?webhookEndpoint=https%3A%2F%2Fa.test%2F&webhookEndpoint=https%3A%2F%2Fb.test%2F`,
      { headers },
    );
    expect(twice.res.status).toBe(400);
    expect(twice.body.message).toBe("webhookEndpoint is given more than once");
    // A secret sent empty (an unset variable): deliveries were meant to be signed.
    const hook = `webhookEndpoint=${encodeURIComponent("https://example.com/hook")}`;
    const empty = await call(`/v4/${PROJECT}/hello/run?async=true&${hook}`, {
      headers: { ...headers, "x-webhook-secret": " " },
    });
    expect(empty.res.status).toBe(400);
    expect(empty.body.message).toMatch(/X-Webhook-Secret is empty/i);
    // A function's input is JSON: an async call's body is checked before it is accepted.
    const notJson = await call(`/v4/${PROJECT}/hello/run?async=true`, { headers, body: "{bad" });
    expect(notJson.res.status).toBe(400);
    expect(notJson.body).toMatchObject({ message: `request body is not valid JSON: ${INSTEAD}` });
    const latin1 = new Uint8Array([0x22, 0x63, 0x61, 0x66, 0xe9, 0x22]); // "café", not UTF-8
    const notUtf8 = await call(`/v4/${PROJECT}/hello/run?async=true`, { headers, body: latin1 });
    expect(notUtf8.res.status).toBe(400);
    expect(notUtf8.body).toMatchObject({ message: `request body is not valid UTF-8: ${INSTEAD}` });
    const deep = `${"[".repeat(1_001)}${"]".repeat(1_001)}`;
    const tooDeep = await call(`/v4/${PROJECT}/hello/run?async=true`, { headers, body: deep });
    expect(tooDeep.res.status).toBe(400);
    expect(tooDeep.body.message).toMatch(/deeper than 1000 levels/);
    // A compressed body read as "not valid UTF-8", its encoding unnamed.
    for (const url of [`/v4/${PROJECT}/hello/run`, `/v4/${PROJECT}/hello/run?async=true`]) {
      const gzipped = await call(url, {
        headers: { ...headers, "content-encoding": "gzip" },
        body: new Uint8Array([0x1f, 0x8b, 0x08, 0x00]),
      });
      expect(gzipped.res.status).toBe(415);
      expect(gzipped.body).toMatchObject({
        code: "unsupported_media_type",
        message:
          "Content-Encoding gzip is not taken: send a managed function's JSON body uncompressed (up to 10 MiB)",
      });
    }
    // A typo of Runlet's own parameters ran synchronously with no webhook: refused, named.
    const typos: Array<[string, string]> = [
      ["Async=true", " (did you mean 'async'?)"],
      ["webhook_endpoint=https%3A%2F%2Fa.test%2F", " (did you mean 'webhookEndpoint'?)"],
      ["name=Ada", ""],
    ];
    for (const [query, meant] of typos) {
      const { res, body } = await call(`/v4/${PROJECT}/hello/run?${query}`, { headers });
      expect(res.status).toBe(400);
      expect(body.message).toBe(
        `unknown query parameter '${query.split("=")[0]}'${meant}: a managed function takes async and webhookEndpoint; its input is the JSON body`,
      );
    }
  });

  it("answers 404 at once for an async call of a function the live version does not export, after asking again", async () => {
    const headers = { authorization: `Bearer ${await sign()}` };
    // What the Worker keeps, and what the control plane says when it is asked again.
    appIsDeployed("hello", "managed", "app_1", ["run", "resize"]);
    appIsDeployed("hello", "managed", "app_1", ["run", "resize"]);
    const { res, body } = await call(`/v4/${PROJECT}/hello/nope?async=true`, { headers });
    expect(res.status).toBe(404);
    expect(body).toMatchObject({
      message: "app 'hello' has no function 'nope' (it exports: run, resize)",
      run_id: res.headers.get("X-Request-Id"),
    });
    // A kept answer older than a deploy that added the function: asked again, it is taken.
    const later = { authorization: `Bearer ${await sign()}` };
    appIsDeployed("hello", "managed", "app_1", ["run"]);
    appIsDeployed("hello", "managed", "app_1", ["run", "added"]);
    hostTakesNext("hello");
    const added = await call(`/v4/${PROJECT}/hello/added?async=true`, { headers: later });
    expect(added.res.status).toBe(202);
  });

  it("answers a sync run unchanged and delivers its response to the webhook afterwards", async () => {
    const headers = { authorization: `Bearer ${await sign()}`, "x-webhook-secret": "k" };
    appIsDeployed();
    hostAnswers(200, { ok: true, result: { v: 1 }, run_time_ms: 2 });
    let delivered: string | undefined;
    fetchMock
      .get("https://hooks.test")
      .intercept({ path: "/sync", method: "POST" })
      .reply(({ body }) => {
        delivered = String(body);
        return { statusCode: 200, data: "" };
      });
    const hook = encodeURIComponent("https://hooks.test/sync");
    const { res, body } = await call(`/v4/${PROJECT}/hello/run?webhookEndpoint=${hook}`, {
      headers,
    });
    expect(res.status).toBe(200);
    expect(body).toEqual({ run_id: body.run_id, result: { v: 1 }, run_time_ms: 2 });
    for (let i = 0; i < 100 && !delivered; i++) await new Promise((r) => setTimeout(r, 10));
    expect(JSON.parse(delivered ?? "{}")).toMatchObject({
      run_id: body.run_id,
      status: "success",
      result: { v: 1 },
    });
    const state = await SELF.fetch(`https://api.test/v4/${PROJECT}/hello/runs/${body.run_id}`, {
      headers,
    });
    expect(await state.json()).toMatchObject({
      async: false,
      status: "success",
      webhook: { signed: true, state: "delivered" },
    });
  });
});

describe("POST /internal/wake", () => {
  it("refuses a caller without the internal token", async () => {
    for (const token of [undefined, "wrong"]) {
      const res = await internal("/internal/wake", token);
      expect(res.status).toBe(401);
      expect(await res.json()).toEqual({
        message: "internal route: invalid token",
        code: "unauthorized",
      });
    }
  });

  it("wakes every shard of every app the control plane lists: running runs are asked about at once", async () => {
    const app = `wake${crypto.randomUUID().slice(0, 8)}`;
    const { headers, runId } = await asyncRun(app);
    await stateOnce(runId, headers, "running", app);
    let listedWith: string | null = null;
    const apps = [app, `${app}-idle`].map((name) => ({ project: PROJECT, app: name }));
    fetchMock
      .get(CONTROL)
      .intercept({ path: "/internal/apps" })
      .reply(({ headers: sent }) => {
        listedWith = new Headers(sent as HeadersInit).get("authorization");
        return { statusCode: 200, data: JSON.stringify({ apps }) };
      });
    let asked = 0;
    fetchMock
      .get(HOST)
      .intercept({ path: `/internal/runs/${runId}` })
      .reply(() => ({ statusCode: 200, data: JSON.stringify({ status: "running", n: ++asked }) }));
    const res = await internal("/internal/wake", env.INTERNAL_TOKEN);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ apps: 2, shards: 8, queued: 0, running: 1, failed: 0 });
    expect(listedWith).toBe(`Bearer ${env.INTERNAL_TOKEN}`);
    await until("the host asked about the running run", () => asked === 1);
  });

  it("wakes only the shards named as stored: no object is made for an app never run async", async () => {
    const app = `stored${crypto.randomUUID().slice(0, 8)}`;
    const { headers, runId } = await asyncRun(app);
    await stateOnce(runId, headers, "running", app);
    const idOf = (name: string, k: number) =>
      env.RUNS.idFromName(shardName(PROJECT, name, k)).toString();
    const apps = [app, `${app}-idle`].map((name) => ({ project: PROJECT, app: name }));
    fetchMock
      .get(CONTROL)
      .intercept({ path: "/internal/apps" })
      .reply(200, JSON.stringify({ apps }));
    let asked = 0;
    fetchMock
      .get(HOST)
      .intercept({ path: `/internal/runs/${runId}` })
      .reply(() => ({ statusCode: 200, data: JSON.stringify({ status: "running", n: ++asked }) }));
    const objects = [idOf(app, shardOf(runId))];
    const res = await internal("/internal/wake", env.INTERNAL_TOKEN, JSON.stringify({ objects }));
    expect(await res.json()).toEqual({ apps: 2, shards: 1, queued: 0, running: 1, failed: 0 });
    await until("the host asked about the running run", () => asked === 1);
    // Waking every shard made the 4 of the idle app and the other 3 of this one.
    const made = new Set((await listDurableObjectIds(env.RUNS)).map((id) => id.toString()));
    const others = Array.from({ length: SHARDS }, (_, k) => k);
    expect(others.filter((k) => made.has(idOf(`${app}-idle`, k)))).toEqual([]);
    expect(others.filter((k) => made.has(idOf(app, k)))).toEqual([shardOf(runId)]);

    const bad = await internal("/internal/wake", env.INTERNAL_TOKEN, '{"objects": "all"}');
    expect(bad.status).toBe(400);
  });

  it("answers 502 when the control plane cannot list the apps", async () => {
    fetchMock.get(CONTROL).intercept({ path: "/internal/apps" }).reply(500, {});
    const res = await internal("/internal/wake", env.INTERNAL_TOKEN);
    expect(res.status).toBe(502);
    expect(await res.json()).toEqual({
      message: "the control plane answered 500",
      code: "bad_gateway",
    });
  });
});
