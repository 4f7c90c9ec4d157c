// The run routes through SELF.fetch (worker/routes/run.ts, runs.ts): authentication and the
// 4xx contract, sync runs, async runs queued in their shard (202, the run's URL, DELETE, a full
// queue), sync runs with a webhook, and the internal routes (the host's callback, the wake-up).
// The worker's upstreams (control plane and runtime host) are played by fetchMock here; the
// end-to-end tests in test/ run the real ones.
import { env, fetchMock, listDurableObjectIds, SELF } from "cloudflare:test";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { JWT_ISSUER } from "../../common/consts.ts";
import {
  generateSigningKey,
  importPrivateKey,
  type RunletClaims,
  signJwt,
} from "../../common/jwt.ts";
import { MAX_QUEUED_RUNS, SHARDS } from "../runs/limits.ts";
import { newRunId, shardName, shardOf } from "../runs/shards.ts";
import { fillQueue, shardNamed, sql, until } from "../runs/test-support.ts";

const CONTROL = "http://control.test";
const HOST = "http://host.test";
const PROJECT = "prj_test";

let sign: (claims?: Partial<RunletClaims>) => Promise<string>;

/** What the worker reported to the control plane's runs index, by run id. */
const runReports = new Map<string, Record<string, unknown>>();

beforeAll(async () => {
  const key = await generateSigningKey();
  const privateKey = await importPrivateKey(key.privateJwk);
  sign = (claims = {}) =>
    signJwt(
      {
        iss: JWT_ISSUER,
        sub: "usr_1",
        jti: `tok_${crypto.randomUUID()}`,
        iat: Math.floor(Date.now() / 1000),
        exp: Math.floor(Date.now() / 1000) + 3600,
        ...claims,
      },
      privateKey,
      key.kid,
    );
  fetchMock.activate();
  fetchMock.disableNetConnect();
  fetchMock
    .get(CONTROL)
    .intercept({ path: "/.well-known/jwks.json" })
    .reply(200, { keys: [{ ...key.publicJwk, kid: key.kid }] })
    .persist();
  fetchMock
    .get(CONTROL)
    .intercept({ path: /^\/internal\/runs\/run_/, method: "PUT" })
    .reply(({ path, body, headers }) => {
      const auth = new Headers(headers as HeadersInit).get("authorization");
      if (auth !== `Bearer ${env.INTERNAL_TOKEN}`) return { statusCode: 401, data: "{}" };
      runReports.set(path.split("/").at(-1) ?? "", JSON.parse(String(body)));
      return { statusCode: 200, data: "{}" };
    })
    .persist();
});

/** The runs-index report of a run, once the worker's waitUntil has sent it (bounded wait). */
async function reportOf(runId: string) {
  for (let i = 0; i < 100 && !runReports.has(runId); i++)
    await new Promise((r) => setTimeout(r, 10));
  return runReports.get(runId);
}

afterEach(() => {
  // Every one-shot upstream answer a test set up was used (the JWKS answer persists).
  expect(fetchMock.pendingInterceptors().filter((i) => !i.persist)).toEqual([]);
});

/** The control plane's answer for `app` (what resolveApp reads). */
function appIsDeployed(app = "hello", runtime: "managed" | "custom" = "managed") {
  fetchMock
    .get(CONTROL)
    .intercept({ path: `/v2/projects/${PROJECT}/apps/${app}` })
    .reply(200, {
      id: "app_1",
      name: app,
      runtime,
      version: 1,
      scaling: { minReplicas: 0, maxReplicas: 2, replicaConcurrency: 4, capacity: 8 },
      responseGracePeriod: 900,
      queueTimeout: 600,
      createdAt: "2026-01-01T00:00:00.000Z",
      updatedAt: "2026-01-01T00:00:00.000Z",
    });
}

function hostAnswers(status: number, body: unknown, fn = "run") {
  fetchMock
    .get(HOST)
    .intercept({ path: `/internal/invoke/${PROJECT}/hello/${fn}`, method: "POST" })
    .reply(status, body as object);
}

async function call(path: string, init: RequestInit = {}) {
  const res = await SELF.fetch(`https://api.test${path}`, { method: "POST", body: "{}", ...init });
  return { res, body: (await res.json()) as Record<string, unknown> };
}

describe("run API: authentication", () => {
  it.each([
    ["no Authorization header", undefined, "missing Authorization header"],
    ["another scheme", "Basic dXNlcjpwYXNz", "Authorization header must be 'Bearer <token>'"],
    ["a token that is not a JWT", "Bearer not-a-jwt", "token is not a JWT"],
  ])("refuses %s with 401 {message} and a run id", async (_, authorization, message) => {
    const { res, body } = await call(`/v4/${PROJECT}/hello/run`, {
      headers: authorization ? { authorization } : {},
    });
    expect(res.status).toBe(401);
    expect(body.message).toBe(message);
    expect(res.headers.get("X-Request-Id")).toMatch(/^run_/);
    expect(body.run_id).toBe(res.headers.get("X-Request-Id"));
  });

  it("refuses an expired token", async () => {
    const token = await sign({ exp: Math.floor(Date.now() / 1000) - 1 });
    const { res, body } = await call(`/v4/${PROJECT}/hello/run`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(res.status).toBe(401);
    expect(body.message).toBe("token has expired");
  });

  it("refuses a token once it expires, though its signature was checked before", async () => {
    const exp = Math.floor(Date.now() / 1000) + 2;
    const token = await sign({ exp });
    appIsDeployed();
    hostAnswers(200, { ok: true, result: 1, run_time_ms: 1 });
    const first = await call(`/v4/${PROJECT}/hello/run`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(first.res.status).toBe(200);
    await new Promise((r) => setTimeout(r, exp * 1000 - Date.now() + 50));
    const later = await call(`/v4/${PROJECT}/hello/run`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(later.res.status).toBe(401);
    expect(later.body.message).toBe("token has expired");
  });

  it("refuses a token whose signature was tampered with", async () => {
    const token = await sign();
    const [h, p] = token.split(".");
    const forged = `${h}.${p}.${"A".repeat(86)}`;
    const { res, body } = await call(`/v4/${PROJECT}/hello/run`, {
      headers: { authorization: `Bearer ${forged}` },
    });
    expect(res.status).toBe(401);
    expect(body.message).toBe("token signature is invalid");
  });

  it("refuses alg none", async () => {
    const enc = (o: object) =>
      btoa(JSON.stringify(o)).replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_");
    const token = `${enc({ alg: "none", typ: "JWT" })}.${enc({ iss: JWT_ISSUER, sub: "usr_1", jti: "t", iat: 0, exp: 9e9 })}.`;
    const { res, body } = await call(`/v4/${PROJECT}/hello/run`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(res.status).toBe(401);
    expect(body.message).toBe("token algorithm must be ES256");
  });

  it("refuses a project token used on another project with 403", async () => {
    const token = await sign({ prj: "prj_other" });
    const { res } = await call(`/v4/${PROJECT}/hello/run`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(res.status).toBe(403);
  });

  it("passes the control plane's 404 for an unknown app through", async () => {
    fetchMock
      .get(CONTROL)
      .intercept({ path: `/v2/projects/${PROJECT}/apps/nope` })
      .reply(404, { message: "app 'nope' is not deployed in project 'prj_test'" });
    const token = await sign();
    const { res, body } = await call(`/v4/${PROJECT}/nope/run`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(res.status).toBe(404);
    expect(body.message).toBe("app 'nope' is not deployed in project 'prj_test'");
  });
});

describe("run API: synchronous runs", () => {
  it("returns {run_id, result, run_time_ms} with X-Request-Id = run_id", async () => {
    const token = await sign();
    appIsDeployed();
    hostAnswers(200, { ok: true, result: { greeting: "Hello, Ada!" }, run_time_ms: 1.5 });
    const { res, body } = await call(`/v4/${PROJECT}/hello/run`, {
      headers: { authorization: `Bearer ${token}` },
      body: JSON.stringify({ name: "Ada" }),
    });
    expect(res.status).toBe(200);
    expect(body).toEqual({
      run_id: res.headers.get("X-Request-Id"),
      result: { greeting: "Hello, Ada!" },
      run_time_ms: 1.5,
    });
  });

  it("leaves runs the host answered to the host's report, and reports those the host failed", async () => {
    const token = await sign();
    appIsDeployed();
    hostAnswers(200, { ok: true, result: 1, run_time_ms: 2.5 });
    const ok = await call(`/v4/${PROJECT}/hello/run`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(ok.res.status).toBe(200);

    // (the app's resolution is cached for 10 s, so the control plane is not asked again)
    hostAnswers(502, { message: "the function's process exited unexpectedly" });
    const broken = await call(`/v4/${PROJECT}/hello/run`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(broken.res.status).toBe(502);
    expect(await reportOf(broken.body.run_id as string)).toMatchObject({
      projectId: PROJECT,
      app: "hello",
      function: "run",
      async: false,
      status: "failure",
    });
    expect(runReports.has(ok.body.run_id as string)).toBe(false);

    // Refused before reaching the host: not a run.
    const refused = await call(`/v4/${PROJECT}/hello/run`);
    expect(refused.res.status).toBe(401);
    expect(await reportOf(refused.body.run_id as string)).toBeUndefined();
  });

  it("lets a numeric status_code in the result set the HTTP status", async () => {
    const token = await sign();
    appIsDeployed();
    hostAnswers(
      200,
      { ok: true, result: { status_code: 418, message: "teapot" }, run_time_ms: 1 },
      "teapot",
    );
    const { res } = await call(`/v4/${PROJECT}/hello/teapot`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(res.status).toBe(418);
  });

  it("turns a thrown error into 500 {run_id, error: {message}}", async () => {
    const token = await sign();
    appIsDeployed();
    hostAnswers(200, { ok: false, error: { message: "boom" }, run_time_ms: 2 }, "fail");
    const { res, body } = await call(`/v4/${PROJECT}/hello/fail`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(res.status).toBe(500);
    expect(body).toEqual({
      run_id: res.headers.get("X-Request-Id"),
      error: { message: "boom" },
      run_time_ms: 2,
    });
  });

  it("passes an unknown export's 404 through and maps a host failure to 502", async () => {
    const token = await sign();
    appIsDeployed();
    hostAnswers(404, { message: "app 'hello' has no function 'nope'" }, "nope");
    const missing = await call(`/v4/${PROJECT}/hello/nope`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(missing.res.status).toBe(404);
    expect(missing.body.message).toBe("app 'hello' has no function 'nope'");

    hostAnswers(401, { message: "bad internal token" });
    const broken = await call(`/v4/${PROJECT}/hello/run`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(broken.res.status).toBe(502);
  });

  it("refuses WebSocket upgrades with a clear 400", async () => {
    const { res, body } = await call(`/v4/${PROJECT}/hello/run`, {
      method: "GET",
      body: null,
      headers: {
        upgrade: "websocket",
        connection: "Upgrade",
        "sec-websocket-version": "13",
        "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
      },
    });
    expect(res.status).toBe(400);
    expect(body.message).toMatch(/WebSocket/);
  });
});

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
    expect(sent[0]?.headers.get("x-runlet-callback-url")).toBe(`https://api.test${callback}`);

    const report = JSON.stringify({ status: "success", result: 1, runTimeMs: 5 });
    const reported = await internal(callback, env.INTERNAL_TOKEN, report);
    expect(reported.status).toBe(200);
    expect(await reported.json()).toEqual({ status: "success" });
    const done = await SELF.fetch(runUrl(runId), { headers });
    expect(done.headers.get("X-Request-Id")).toBe(runId);
    expect(await done.json()).toMatchObject({ status: "success", run_time_ms: 5 });

    // Not a run of another app (the runs index says whose it is); an ended run is not cancelled.
    appIsDeployed("other");
    fetchMock
      .get(CONTROL)
      .intercept({ path: `/v2/projects/${PROJECT}/runs/${runId}` })
      .reply(200, { id: runId, app: "hello", function: "run", async: true, status: "success" });
    expect((await SELF.fetch(runUrl(runId, "other"), { headers })).status).toBe(404);
    const cancel = await SELF.fetch(runUrl(runId), { method: "DELETE", headers });
    expect(cancel.status).toBe(409);
  });

  it("takes the host's callback only with the internal token; an unknown run is 404, a body not JSON 400", async () => {
    const path = `/internal/apps/${PROJECT}/hello/runs/${newRunId()}/complete`;
    const report = JSON.stringify({ status: "success" });
    for (const token of [undefined, "wrong"]) {
      const res = await internal(path, token, report);
      expect(res.status).toBe(401);
      expect(await res.json()).toEqual({ message: "internal route: invalid token" });
    }
    const unknown = await internal(path, env.INTERNAL_TOKEN, report);
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ message: "no such run" });
    expect((await internal(path, env.INTERNAL_TOKEN, "not json")).status).toBe(400);
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
    index(known).reply(200, {
      ...{ id: known, app: "hello", function: "run", async: false, status: "success" },
      ...{ createdAt: at, finishedAt: at, runTimeMs: 2 },
    });
    index(unknown).reply(404, { message: "not found" });
    const found = await SELF.fetch(runUrl(known), { headers });
    expect(await found.json()).toEqual({
      ...{ run_id: known, project: PROJECT, app: "hello", function: "run", async: false },
      ...{ status: "success", created_at: at, started_at: at, finished_at: at, run_time_ms: 2 },
    });
    const missing = await SELF.fetch(runUrl(unknown), { headers });
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({
      message: `no run '${unknown}' of app 'hello' in project '${PROJECT}'`,
      run_id: unknown,
    });
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

  it("answers 429 {message, run_id} once the app's queue is full", async () => {
    const headers = { authorization: `Bearer ${await sign()}` };
    appIsDeployed("full");
    for (let k = 0; k < SHARDS; k++)
      await fillQueue("full", k, Math.ceil(MAX_QUEUED_RUNS / SHARDS), PROJECT);
    const { res, body } = await call(`/v4/${PROJECT}/full/run?async=true`, { headers });
    expect(res.status).toBe(429);
    expect(body).toEqual({
      message: "app 'full' has too many runs waiting (about 100,000): try again once some have run",
      run_id: res.headers.get("X-Request-Id"),
    });
  });

  it("hands a custom app's async request over as it came, less the caller's token, the secret and Runlet's parameters", async () => {
    const authorization = `Bearer ${await sign()}`;
    appIsDeployed("web", "custom");
    const sent = hostTakesNext("web", "async-http");
    const hook = encodeURIComponent("https://hooks.test/web");
    const { res } = await call(
      `/v4/${PROJECT}/web/items/7?x=1&async=true&webhookEndpoint=${hook}&y=%2F`,
      {
        method: "PUT",
        headers: { authorization, "x-webhook-secret": "k", "x-custom": "yes" },
        body: "hello",
      },
    );
    expect(res.status).toBe(202);
    await until("the hand-over", () => sent.length === 1);
    const path = `/internal/async-http/${PROJECT}/web/items/7?x=1&y=%2F`;
    expect(sent[0]).toMatchObject({ method: "PUT", path, body: "hello" });
    expect(sent[0]?.headers.get("x-custom")).toBe("yes");
    expect(sent[0]?.headers.get("x-webhook-secret")).toBeNull();
    expect(sent[0]?.headers.get("authorization")).toBe(`Bearer ${env.INTERNAL_TOKEN}`);
  });
  it("refuses a bad async value and a bad or private webhookEndpoint with 400", async () => {
    const headers = { authorization: `Bearer ${await sign()}` };
    appIsDeployed();
    for (const query of [
      "async=1",
      "webhookEndpoint=",
      "webhookEndpoint=ftp%3A%2F%2Fexample.com%2F",
      "webhookEndpoint=http%3A%2F%2F127.0.0.1%3A9%2Fhook",
    ]) {
      const { res, body } = await call(`/v4/${PROJECT}/hello/run?${query}`, { headers });
      expect({ query, status: res.status }).toEqual({ query, status: 400 });
      expect(body.run_id).toBe(res.headers.get("X-Request-Id"));
    }
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
      expect(await res.json()).toEqual({ message: "internal route: invalid token" });
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
    expect(await res.json()).toEqual({ apps: 2, queued: 0, running: 1 });
    expect(listedWith).toBe(`Bearer ${env.INTERNAL_TOKEN}`);
    await until("the host asked about the running run", () => asked === 1);
  });

  it("answers 502 when the control plane cannot list the apps", async () => {
    fetchMock.get(CONTROL).intercept({ path: "/internal/apps" }).reply(500, {});
    const res = await internal("/internal/wake", env.INTERNAL_TOKEN);
    expect(res.status).toBe(502);
    expect(await res.json()).toEqual({ message: "the control plane answered 500" });
  });
});
