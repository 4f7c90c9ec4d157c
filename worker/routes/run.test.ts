// The run routes through SELF.fetch (worker/routes/run.ts): authentication and the 4xx
// contract, and sync runs. Async runs, run state and the internal routes: runs.test.ts.
import { fetchMock, SELF } from "cloudflare:test";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { JWT_ISSUER } from "../../common/consts.ts";
import {
  appIsDeployed,
  CONTROL,
  call,
  expectUpstreamsUsed,
  HOST,
  hostAnswers,
  PROJECT,
  reported,
  reportOf,
  setUpUpstreams,
  sign,
} from "./test-support.ts";

beforeAll(setUpUpstreams);
afterEach(expectUpstreamsUsed);

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
    expect(body.code).toBe("unauthorized");
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
    expect(body.code).toBe("unauthorized");
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
    expect(later.body.code).toBe("unauthorized");
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
    expect(body.code).toBe("unauthorized");
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
    expect(body.code).toBe("unauthorized");
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
    expect(body.code).toBe("not_found");
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
    expect(broken.body.code).toBe("bad_gateway");
    expect(await reportOf(broken.body.run_id as string)).toMatchObject({
      projectId: PROJECT,
      app: "hello",
      function: "run",
      async: false,
      status: "failure",
    });
    expect(reported(ok.body.run_id as string)).toBe(false);

    // Refused by the host before the function ran (its input is no JSON): not a run either, as
    // an async call's input refused by the Worker is not (it was listed as a failed run).
    hostAnswers(400, { message: "request body is not valid JSON: …" });
    const badInput = await call(`/v4/${PROJECT}/hello/run`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}` },
      body: "{bad",
    });
    expect(badInput.res.status).toBe(400);
    expect(await reportOf(badInput.body.run_id as string)).toBeUndefined();

    // Refused before reaching the host: not a run.
    const refused = await call(`/v4/${PROJECT}/hello/run`);
    expect(refused.res.status).toBe(401);
    expect(refused.body.code).toBe("unauthorized");
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

  it("answers a status_code that carries no body (204, 205, 304) without one", async () => {
    const token = await sign();
    appIsDeployed();
    for (const status_code of [204, 205, 304]) {
      hostAnswers(200, { ok: true, result: { status_code }, run_time_ms: 1 }, "empty");
      const res = await SELF.fetch(`https://api.test/v4/${PROJECT}/hello/empty`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}` },
        body: "{}",
      });
      expect([res.status, await res.text()]).toEqual([status_code, ""]);
      expect(res.headers.get("x-request-id")).toMatch(/^run_/);
    }
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
    expect(missing.body.code).toBe("not_found");
    expect(missing.body.message).toBe("app 'hello' has no function 'nope'");

    hostAnswers(401, { message: "bad internal token" });
    const broken = await call(`/v4/${PROJECT}/hello/run`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(broken.res.status).toBe(502);
    expect(broken.body.code).toBe("bad_gateway");
  });

  it("answers 504 when the host does not answer a call within the longest it may take", async () => {
    const token = await sign();
    appIsDeployed();
    // Past HOST_ANSWER_MS (1 s in the tests; 6.5 min for real).
    hostAnswers(200, { ok: true, result: "late", run_time_ms: 1 }, "run", 1_500);
    const { res, body } = await call(`/v4/${PROJECT}/hello/run`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(res.status).toBe(504);
    expect(body).toMatchObject({
      code: "gateway_timeout",
      message: "the runtime host did not answer the call in time",
    });
  });

  it("answers 504 when the host gives no head of a custom app's answer within that time", async () => {
    const token = await sign();
    appIsDeployed("slow-web", "custom");
    fetchMock
      .get(HOST)
      .intercept({ path: `/internal/http/${PROJECT}/slow-web/`, method: "GET" })
      .reply(200, "late")
      .delay(1_500);
    const { res, body } = await call(`/v4/${PROJECT}/slow-web`, {
      method: "GET",
      body: null,
      headers: { authorization: `Bearer ${token}` },
    });
    expect(res.status).toBe(504);
    expect(body.message).toBe("the runtime host did not answer the request in time");
  });

  it.each([
    ["sync", "ctl-web", ""],
    ["async", "ctl-web-async", "?async=true"],
  ])(
    "refuses a %s call whose header holds a control character, with 400 and no run",
    async (_, app, query) => {
      // workerd takes it and the host's parser did not: sync, the host's own 400 came back without
      // a run id; async, a 202 and then a failed run. No host is called now.
      const token = await sign();
      appIsDeployed(app, "custom");
      const { res, body } = await call(`/v4/${PROJECT}/${app}/notes${query}`, {
        headers: {
          authorization: `Bearer ${token}`,
          "x-note": "a\u0001b",
          "x-fine": "a\ttab",
        },
      });
      expect(res.status).toBe(400);
      expect(body).toMatchObject({
        code: "bad_request",
        message:
          "header 'x-note' holds a control character (U+0001), which HTTP does not allow in a header value",
        run_id: res.headers.get("X-Request-Id"),
      });
      expect(reported(String(body.run_id))).toBe(false);
    },
  );

  it("answers 502 when the control plane does not say in time who may call the app", async () => {
    const token = await sign();
    // Past CONTROL_PLANE_PATIENCE_MS (1 s in the tests; 10 s for real): a hung control plane
    // held every call for as long as it hung.
    fetchMock
      .get(CONTROL)
      .intercept({ path: `/v2/projects/${PROJECT}/apps/hello` })
      .reply(200, {})
      .delay(1_500);
    const { res, body } = await call(`/v4/${PROJECT}/hello/run`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(res.status).toBe(502);
    expect(body.message).toBe("the control plane is not reachable");
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

describe("run API: a request body without a Content-Length", () => {
  const MiB = 1024 * 1024;
  /** MiB of the body sent so far: it is made as it is read. */
  let pulled = 0;
  /** `mib` MiB, chunked: no Content-Length reaches the Worker. */
  const chunked = (mib: number) => {
    pulled = 0;
    return new ReadableStream<Uint8Array>({
      pull(out) {
        if (pulled++ < mib) out.enqueue(new Uint8Array(MiB).fill(0x20));
        else out.close();
      },
    });
  };
  const send = async (path: string, mib: number, method = "POST") =>
    SELF.fetch(`https://api.test${path}`, {
      method,
      headers: { authorization: `Bearer ${await sign()}` },
      body: chunked(mib),
    });

  it("is refused 413 past 10 MiB, read no further, before any host is called", async () => {
    appIsDeployed();
    const res = await send(`/v4/${PROJECT}/hello/run`, 64);
    expect(res.status).toBe(413);
    expect(await res.json()).toMatchObject({ message: "the request body is larger than 10 MiB" });
    // Read whole, 400 MB had taken workerd from 219 MB to 987 MB of memory.
    expect(pulled).toBeLessThan(24);
  });

  it("to a custom app, is read in the Worker up to 10 MiB: past it 413, never a shorter body", async () => {
    appIsDeployed("big-web", "custom");
    // A stream cut at the limit had reached the app as a whole, shorter body (workerd ends a
    // request body that errors as if it were complete). No host is called here.
    const res = await send(`/v4/${PROJECT}/big-web/upload`, 64, "PUT");
    expect(res.status).toBe(413);
    expect(await res.json()).toMatchObject({ message: "the request body is larger than 10 MiB" });
    expect(pulled).toBeLessThan(24);
  });

  it("to a custom app, below the limit, arrives whole and with its length", async () => {
    appIsDeployed("sized-web", "custom");
    const sizes: number[] = [];
    fetchMock
      .get(HOST)
      .intercept({ path: `/internal/http/${PROJECT}/sized-web/upload`, method: "PUT" })
      .reply(200, ({ body }) => {
        sizes.push(String(body).length);
        return "stored";
      });
    const chunkedRes = await send(`/v4/${PROJECT}/sized-web/upload`, 2, "PUT");
    expect([chunkedRes.status, await chunkedRes.text()]).toEqual([200, "stored"]);
    // Whole: every byte, not a stream cut short. (Its Content-Length, and a body sent with one
    // streaming on as it came, are seen by a real app in test/e2e.test.ts.)
    expect(sizes).toEqual([2 * MiB]);
  });
});
