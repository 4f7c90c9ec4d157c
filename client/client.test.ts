/**
 * `runlet/client` against a scripted run API: a real HTTP server on loopback that records each
 * request and answers what the test says, to reach the answers a real stack gives rarely (a
 * proxy's page, a 503 while waiting, no answer at all). test/client.test.ts runs the client
 * against a real Runlet.
 */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ERROR_STATUS } from "../common/errors.ts";
import { ERROR_CODES } from "./errors.mjs";
import { createClient } from "./index.mjs";
import { failure } from "./test-support.ts";

interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}
type Answer = {
  status: number;
  body?: unknown;
  text?: string;
  headers?: Record<string, string>;
  /** No answer: the connection is cut once the request is read. */
  cut?: true;
};

const seen: Seen[] = [];
let answers: Answer[] = [];
let apiUrl = "";
const server = createServer((req, res: ServerResponse) => {
  let body = "";
  req.on("data", (chunk) => {
    body += chunk;
  });
  req.on("end", () => {
    seen.push({
      method: req.method ?? "",
      url: req.url ?? "",
      headers: req.headers,
      body,
      at: Date.now(),
    });
    const answer = answers.shift() ?? { status: 599, text: "no answer scripted" };
    if (answer.cut) return void req.socket.destroy();
    const text = answer.text ?? (answer.body === undefined ? "" : JSON.stringify(answer.body));
    res.writeHead(answer.status, answer.headers).end(text);
  });
});

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  apiUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
beforeEach(() => {
  seen.length = 0;
  answers = [];
});

const RUN = "run_01m83seppqjs3bzyxswmmp1rr2";
const client = () => createClient({ apiUrl, project: "prj_1", token: "tok" });
const view = (status: string) => ({ run_id: RUN, app: "a b", status, host: null });

describe("runlet/client", () => {
  it("knows the error codes of common/errors.ts, each with its status", () => {
    const fromServer = Object.fromEntries(Object.entries(ERROR_STATUS).map(([c, s]) => [s, c]));
    expect(ERROR_CODES).toEqual(fromServer);
  });

  it("runs a function: path, query, headers and body; the result, its status and its replay", async () => {
    answers = [
      {
        status: 200,
        body: { run_id: RUN, result: { n: 1 }, run_time_ms: 1.5 },
        headers: { "idempotent-replayed": "true", "x-request-id": RUN },
      },
      { status: 418, body: { run_id: RUN, result: { status_code: 418 }, run_time_ms: 1 } },
      { status: 202, body: { run_id: RUN } },
    ];
    const api = client();
    const hook = "https://example.com/h?x=1&y=2";
    const ran = await api.run(
      "my app",
      "fn/x",
      { a: "é" },
      { webhook: hook, secret: "s", idempotencyKey: "k1" },
    );
    expect(ran).toEqual({
      runId: RUN,
      result: { n: 1 },
      runTimeMs: 1.5,
      status: 200,
      replayed: true,
    });
    const [call] = seen;
    expect(call?.method).toBe("POST");
    expect(call?.url).toBe(`/v4/prj_1/my%20app/fn%2Fx?webhookEndpoint=${encodeURIComponent(hook)}`);
    expect(call?.headers).toMatchObject({
      authorization: "Bearer tok",
      "content-type": "application/json",
      "x-webhook-secret": "s",
      "idempotency-key": "k1",
    });
    expect(call?.body).toBe('{"a":"é"}');

    // A result with its own status_code is a result, not an error; no input is an empty body.
    expect(await api.run("a", "teapot")).toMatchObject({ status: 418, replayed: false });
    expect(seen[1]?.body).toBe("");
    expect(seen[1]?.headers["x-webhook-secret"]).toBeUndefined();

    expect(await api.run("a", "run", null, { async: true })).toEqual({
      runId: RUN,
      replayed: false,
    });
    expect(seen[2]?.url).toBe("/v4/prj_1/a/run?async=true");
    expect(seen[2]?.body).toBe("null");
  });

  it("sends a webhook secret past ASCII as its UTF-8 bytes, which fetch refused as a header value (it read as no answer)", async () => {
    answers = [
      { status: 200, body: { run_id: RUN, result: 1, run_time_ms: 1 } },
      { status: 202, body: view("success") },
    ];
    const api = client();
    const secret = "sécret 🎉 ключ";
    const options = { webhook: "https://example.com/h", secret };
    expect(await api.run("a", "run", {}, options)).toMatchObject({ status: 200 });
    await api.redeliver("a", RUN, options);
    // Node's server reads a header's bytes one character each: back to bytes, then UTF-8.
    const sent = seen.map((s) => Buffer.from(String(s.headers["x-webhook-secret"]), "latin1"));
    expect(sent.map((bytes) => bytes.toString("utf8"))).toEqual([secret, secret]);
  });

  it("resolves a function's own 204, 205 or 304, which come without a body: the run id from X-Request-Id", async () => {
    answers = [204, 205, 304].map((status) => ({ status, headers: { "x-request-id": RUN } }));
    const api = client();
    for (const status of [204, 205, 304]) {
      expect(await api.run("a b", "quiet")).toEqual({
        runId: RUN,
        result: undefined,
        runTimeMs: undefined,
        status,
        replayed: false,
      });
    }
    // It is a run this client started: its app is remembered.
    answers = [{ status: 200, body: view("success") }];
    expect(await api.status(RUN)).toMatchObject({ status: "success" });
    expect(seen.at(-1)?.url).toBe(`/v4/prj_1/a%20b/runs/${RUN}`);
  });

  it("rejects a function that threw with function_error, its run id and run time", async () => {
    answers = [
      { status: 500, body: { run_id: RUN, error: { message: "no luck" }, run_time_ms: 3 } },
    ];
    const err = await failure(client().run("a", "fail", {}));
    expect(err).toMatchObject({
      status: 500,
      code: "function_error",
      message: "no luck",
      runId: RUN,
      runTimeMs: 3,
    });
  });

  it("rejects a refusal with the API's message, code and run id; or says what came instead", async () => {
    answers = [
      { status: 404, body: { message: "no app 'ghost'", code: "not_found", run_id: RUN } },
      { status: 502, text: "<html>Bad Gateway</html>", headers: { "x-request-id": RUN } },
      { status: 503 },
      { status: 200, text: "<html>a captive portal</html>" },
    ];
    const api = client();
    expect(await failure(api.run("ghost", "run"))).toMatchObject({
      status: 404,
      code: "not_found",
      message: "no app 'ghost'",
      runId: RUN,
      body: { message: "no app 'ghost'", code: "not_found", run_id: RUN },
    });
    const proxy = await failure(api.run("a", "run"));
    expect(proxy).toMatchObject({
      status: 502,
      code: "bad_gateway",
      runId: RUN,
      body: "<html>Bad Gateway</html>",
    });
    expect(proxy.message).toBe(
      "the run API answered 502 with a body that is not Runlet's: <html>Bad Gateway</html>",
    );
    expect((await failure(api.status("a", RUN))).message).toBe(
      "the run API answered 503 with no body",
    );
    expect(await failure(api.run("a", "run"))).toMatchObject({
      status: 200,
      code: "invalid_answer",
    });
  });

  it("sends a call with an idempotency key again when wrangler's dev proxy answered 503 in the Worker's stead, and only then", async () => {
    // What wrangler's dev proxy answers a POST it could not pass on to the Worker: text, no run id.
    const proxy = {
      status: 503,
      text: "Your worker restarted mid-request. Please try sending the request again. Only GET or HEAD requests are retried automatically.",
      headers: { "retry-after": "0" },
    };
    const runlets = {
      status: 503,
      body: { message: "shutting down", code: "unavailable", run_id: RUN },
    };
    answers = [proxy, { status: 202, body: { run_id: RUN }, headers: { "x-request-id": RUN } }];
    const api = client();
    const options = { async: true, idempotencyKey: "k2" };
    expect(await api.run("a", "run", { n: 1 }, options)).toEqual({ runId: RUN, replayed: false });
    expect(seen.map((s) => [s.url, s.headers["idempotency-key"], s.body])).toEqual([
      ["/v4/prj_1/a/run?async=true", "k2", '{"n":1}'],
      ["/v4/prj_1/a/run?async=true", "k2", '{"n":1}'],
    ]);

    // Without a key a second send could run it twice (a real reload mid-request): it is refused.
    seen.length = 0;
    answers = [proxy];
    expect(await failure(api.run("a", "run", {}, { async: true }))).toMatchObject({
      status: 503,
      code: "unavailable",
    });
    // The Worker's own 503 is its answer, and a proxy's 503 three times in a row is one too.
    answers = [{ ...runlets, headers: { "x-request-id": RUN } }, proxy, proxy, proxy];
    expect(await failure(api.run("a", "run", {}, options))).toMatchObject({ runId: RUN });
    expect(await failure(api.run("a", "run", {}, options))).toMatchObject({ status: 503 });
    expect(seen).toHaveLength(5);
  });

  it("sends a call with an idempotency key again when its connection was cut before an answer, and only then", async () => {
    const cut = { status: 0, cut: true } as const;
    const accepted = { status: 202, body: { run_id: RUN }, headers: { "x-request-id": RUN } };
    answers = [cut, accepted];
    const api = client();
    const options = { async: true, idempotencyKey: "k3" };
    expect(await api.run("a", "run", { n: 1 }, options)).toEqual({ runId: RUN, replayed: false });
    expect(seen.map((s) => s.headers["idempotency-key"])).toEqual(["k3", "k3"]);

    // Without a key it may have run: the cut is the error. Three cuts in a row are one too.
    seen.length = 0;
    answers = [cut, cut, cut, cut];
    expect(await failure(api.run("a", "run", {}, { async: true }))).toMatchObject({
      code: "network_error",
    });
    expect(await failure(api.run("a", "run", {}, options))).toMatchObject({
      code: "network_error",
    });
    expect(seen).toHaveLength(4);
  });

  it("wraps a request that got no answer as network_error, with the cause; an abort is the signal's", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const offline = createClient({ apiUrl: `http://127.0.0.1:${port}`, project: "p", token: "t" });
    const err = await failure(offline.status("a", RUN));
    expect(err).toMatchObject({ status: 0, code: "network_error", runId: RUN });
    expect(err.message).toMatch(
      /^cannot reach the run API at http:\/\/127\.0\.0\.1:\d+: fetch failed/,
    );
    expect(err.cause).toBeInstanceOf(Error);

    const aborted = new AbortController();
    aborted.abort(new Error("the caller gave up"));
    await expect(client().run("a", "run", {}, { signal: aborted.signal })).rejects.toThrow(
      "the caller gave up",
    );
    await expect(client().waitFor("a", RUN, { signal: aborted.signal })).rejects.toThrow(
      "the caller gave up",
    );
  });

  it("reads, cancels and redelivers a run at its URL", async () => {
    answers = [
      { status: 200, body: view("running") },
      { status: 200, body: view("cancelled") },
      { status: 200, body: view("cancelled") },
      { status: 202, body: view("success") },
      { status: 409, body: { message: "a delivery is under way", code: "conflict", run_id: RUN } },
    ];
    const api = client();
    expect((await api.status("a b", RUN)).status).toBe("running");
    expect((await api.cancel("a b", RUN)).status).toBe("cancelled");
    expect((await api.cancel("a b", RUN, { onlyIfQueued: true })).status).toBe("cancelled");
    expect(
      (await api.redeliver("a b", RUN, { webhook: "https://example.com/h", secret: "s2" })).status,
    ).toBe("success");
    expect(await failure(api.redeliver("a b", RUN))).toMatchObject({
      status: 409,
      code: "conflict",
      runId: RUN,
    });
    expect(seen.map((s) => `${s.method} ${s.url}`)).toEqual([
      `GET /v4/prj_1/a%20b/runs/${RUN}`,
      `DELETE /v4/prj_1/a%20b/runs/${RUN}`,
      `DELETE /v4/prj_1/a%20b/runs/${RUN}?onlyIfQueued=true`,
      `POST /v4/prj_1/a%20b/runs/${RUN}/deliveries?webhookEndpoint=${encodeURIComponent("https://example.com/h")}`,
      `POST /v4/prj_1/a%20b/runs/${RUN}/deliveries`,
    ]);
    expect(seen[3]?.headers["x-webhook-secret"]).toBe("s2");
    expect(seen[4]?.headers["x-webhook-secret"]).toBeUndefined();
  });

  it("needs no app for a run it started; a run id it does not know, without its app, is a TypeError", async () => {
    answers = [
      { status: 202, body: { run_id: RUN }, headers: { "x-request-id": RUN } },
      { status: 200, body: view("success") },
      { status: 200, body: view("success") },
    ];
    const api = client();
    await api.run("a b", "run", {}, { async: true });
    expect(await api.waitFor(RUN)).toMatchObject({ status: "success" });
    expect(await api.status(RUN)).toMatchObject({ status: "success" });
    expect(seen.slice(1).map((s) => `${s.method} ${s.url}`)).toEqual([
      `GET /v4/prj_1/a%20b/runs/${RUN}`,
      `GET /v4/prj_1/a%20b/runs/${RUN}`,
    ]);
    expect(() => api.status("run_someone_elses")).toThrow(TypeError);
  });

  it("waits for a run's end, reading again through a 503 with longer and longer pauses", async () => {
    answers = [
      { status: 200, body: view("queued") },
      { status: 503, body: { message: "restarting", code: "unavailable" } },
      { status: 200, body: view("running") },
      { status: 200, body: view("running") },
      { status: 200, body: view("failure") },
    ];
    const ended = await client().waitFor("a", RUN, { intervalMs: 20 });
    expect(ended.status).toBe("failure");
    expect(seen).toHaveLength(5);
    const pauses = seen.slice(1).map((s, i) => s.at - (seen[i] as Seen).at);
    expect(pauses[0]).toBeGreaterThanOrEqual(19);
    expect(pauses[3]).toBeGreaterThanOrEqual(60); // 20, 30, 45, 67.5 ms
  });

  it("stops waiting at the timeout with code timeout, and at once on a 404", async () => {
    answers = Array.from({ length: 50 }, () => ({ status: 200, body: view("running") }));
    // Long enough for a read to be answered on a busy machine: the message names the last state.
    const err = await failure(client().waitFor("a", RUN, { intervalMs: 10, timeoutMs: 1_000 }));
    expect(err).toMatchObject({ status: 0, code: "timeout", runId: RUN });
    expect(err.message).toBe(`run ${RUN} has not ended after 1000 ms (running)`);

    // The read in flight when the time ran out may reach this server only now and take an
    // answer; there is one for it too, so the next read is answered 404 either way.
    const gone = { status: 404, body: { message: "no run", code: "not_found", run_id: RUN } };
    answers = [gone, gone];
    expect(await failure(client().waitFor("a", RUN))).toMatchObject({
      status: 404,
      code: "not_found",
    });
  });
  it("stops waiting at the timeout when a read gets no answer at all", async () => {
    // A server that takes the request and never answers (a stuck proxy, a frozen Worker).
    const silent = createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const { port } = silent.address() as AddressInfo;
    const api = createClient({ apiUrl: `http://127.0.0.1:${port}`, project: "p", token: "t" });
    try {
      // Without the bound it was still waiting when this gave up, 3 s on.
      const err = await failure(
        Promise.race([
          api.waitFor("a", RUN, { timeoutMs: 200 }),
          new Promise((_, reject) => setTimeout(() => reject(new Error("still waiting")), 3_000)),
        ]),
      );
      expect(err).toMatchObject({ status: 0, code: "timeout", runId: RUN });
      expect(err.message).toBe(
        `run ${RUN} has not ended after 200 ms (no answer before the time was up)`,
      );
      // The caller's own abort still rejects with its reason, not a timeout.
      const aborted = new AbortController();
      setTimeout(() => aborted.abort(new Error("the caller gave up")), 50);
      await expect(
        api.waitFor("a", RUN, { timeoutMs: 60_000, signal: aborted.signal }),
      ).rejects.toThrow("the caller gave up");
    } finally {
      silent.closeAllConnections();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  });
});
