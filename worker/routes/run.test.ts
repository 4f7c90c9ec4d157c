import { env, fetchMock, SELF } from "cloudflare:test";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { JWT_ISSUER } from "../../common/consts.ts";
import {
  generateSigningKey,
  importPrivateKey,
  type RunletClaims,
  signJwt,
} from "../../common/jwt.ts";

// The worker's upstreams (control plane and runtime host) are played by fetchMock here; the
// end-to-end tests in test/ run the real ones.
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

function appIsDeployed(app = "hello") {
  fetchMock
    .get(CONTROL)
    .intercept({ path: `/v2/projects/${PROJECT}/apps/${app}` })
    .reply(200, { id: "app_1", name: app, runtime: "managed", version: 1 });
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

describe("run API: async runs, run state and webhooks", () => {
  const asyncAccepted = (fn = "run") =>
    fetchMock
      .get(HOST)
      .intercept({ path: `/internal/async/${PROJECT}/hello/${fn}`, method: "POST" })
      .reply(202, { status: "running", startedAt: Date.now(), deadlineAt: Date.now() + 60_000 });

  const complete = (runId: string, body: unknown, token = env.INTERNAL_TOKEN) =>
    SELF.fetch(`https://api.test/internal/runs/${runId}/complete`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });

  it("answers async=true with 202 and exactly {run_id}; the run's URL follows it to its end", async () => {
    const token = await sign();
    const headers = { authorization: `Bearer ${token}` };
    appIsDeployed();
    asyncAccepted();
    const { res, body } = await call(`/v4/${PROJECT}/hello/run?async=true`, { headers });
    expect(res.status).toBe(202);
    expect(body).toEqual({ run_id: res.headers.get("X-Request-Id") });
    const runId = body.run_id as string;
    const url = `https://api.test/v4/${PROJECT}/hello/runs/${runId}`;
    const running = await SELF.fetch(url, { headers });
    expect(await running.json()).toMatchObject({ run_id: runId, status: "running", async: true });

    expect((await complete(runId, { status: "success" }, "wrong")).status).toBe(401);
    expect((await complete(runId, { status: "success", result: 1, runTimeMs: 5 })).status).toBe(
      200,
    );
    const done = await SELF.fetch(url, { headers });
    expect(done.headers.get("X-Request-Id")).toBe(runId);
    expect(await done.json()).toMatchObject({ status: "success", run_time_ms: 5 });

    // Not a run of another app, and a sync-only action on it is refused.
    appIsDeployed("other");
    const elsewhere = await SELF.fetch(`https://api.test/v4/${PROJECT}/other/runs/${runId}`, {
      headers,
    });
    expect(elsewhere.status).toBe(404);
    const cancel = await SELF.fetch(url, { method: "DELETE", headers });
    expect(cancel.status).toBe(409);
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
