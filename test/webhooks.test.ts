import { createHmac } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verifyWebhook } from "../webhooks/index.mjs";
import { waitOrCancel } from "./apps.ts";
import { type Json, json, type Runlet } from "./harness.ts";
import { nodeRequest } from "./raw-http.ts";
import { type Receiver, startReceiver } from "./receiver.ts";
import { sharedRunlet } from "./shared-stack.ts";

// Async runs and webhook deliveries through the real components: `runlet start` (wrangler dev
// with the run Durable Objects, the runtime host, the control plane) and a real receiver on
// loopback. The signature is checked here with node:crypto, independently of the signer.

const JOBS = {
  "runlet.toml": 'name = "jobs"\nruntime = "managed"\nresponse_grace_period = 120',
  "main.mjs": `
export function run(input, ctx) { return { echo: input, async: ctx.async }; }
export function fail() { throw new Error("it broke"); }
export function die() { process.exit(3); }
export function huge() { return "x".repeat(11 * 1024 * 1024); }
export async function nap(input) {
  await new Promise((resolve) => setTimeout(resolve, input.ms));
  return { napped: input.ms };
}
export async function slow(input, ctx) {
  ${waitOrCancel("60_000")}
  return "finished";
}
`,
};

const SITE = {
  "runlet.toml": 'name = "site"\nruntime = "custom"\n[custom]\nentrypoint = ["node", "server.js"]',
  "server.js": `const zlib = require("node:zlib");
require("node:http").createServer((req, res) => {
  if (req.url === "/health") return res.end("ok");
  if (req.url === "/cut") { res.write("partial"); return setTimeout(() => req.socket.destroy(), 50); }
  if (req.url === "/events") {
    res.writeHead(200, { "content-type": "text/event-stream" });
    let n = 0;
    const tick = setInterval(() => { res.write("data: " + n + "\\n\\n"); if (++n === 3) { clearInterval(tick); res.end(); } }, 300);
    return;
  }
  if (req.url.startsWith("/auto")) {
    // Compressed when the request accepts it, as many servers do.
    const body = JSON.stringify({ items: [1, 2, 3], seen: req.headers["accept-encoding"] ?? null });
    const gzip = /gzip/.test(req.headers["accept-encoding"] ?? "");
    res.writeHead(200, { "content-type": "application/json", ...(gzip ? { "content-encoding": "gzip" } : {}) });
    return res.end(gzip ? zlib.gzipSync(body) : body);
  }
  if (req.url.startsWith("/png")) {
    res.writeHead(200, { "content-type": "image/png" });
    return res.end(Buffer.from("89504e470d0a1a0a0000000d49484452", "hex"));
  }
  res.writeHead(201, { "content-type": "application/json" });
  res.end(JSON.stringify({ made: true, url: req.url, secret: req.headers["x-webhook-secret"] ?? null }));
}).listen(Number(process.env.PORT), "127.0.0.1");`,
};

describe("async runs and webhooks, end to end", () => {
  let runlet: Runlet;
  let receiver: Receiver;

  const auth = () => ({
    authorization: `Bearer ${runlet.local.token}`,
    "content-type": "application/json",
  });

  const run = (path: string, init: RequestInit = {}) =>
    fetch(`${runlet.local.apiUrl}/v4/${runlet.local.projectId}${path}`, {
      method: "POST",
      body: "{}",
      ...init,
      headers: { ...auth(), ...(init.headers as Record<string, string>) },
    });

  const runUrl = (app: string, runId: string) =>
    `${runlet.local.apiUrl}/v4/${runlet.local.projectId}/${app}/runs/${runId}`;

  const state = async (app: string, runId: string) =>
    json(await fetch(runUrl(app, runId), { headers: auth() }));

  /** The run's state once `done` holds (bounded). */
  async function stateWhen(app: string, runId: string, done: (s: Json) => boolean) {
    const deadline = Date.now() + 45_000;
    for (;;) {
      const s = await state(app, runId);
      if (done(s)) return s;
      if (Date.now() > deadline) throw new Error(`run ${runId}: ${JSON.stringify(s)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** The run's entry in the runs index once it is in `status` (bounded: the host reports in batches). */
  async function indexed(runId: string, status: string, async = true, app = "jobs") {
    const url = `${runlet.local.baseUrl}/v2/projects/${runlet.local.projectId}/runs?async=${async}&app=${app}`;
    let entry: Json | undefined;
    for (let i = 0; i < 50 && entry?.status !== status; i++) {
      if (i) await new Promise((r) => setTimeout(r, 20));
      const index = await json(await fetch(url, { headers: auth() }));
      entry = index.runs.find((r: Json) => r.id === runId);
    }
    return entry;
  }

  const hook = (path: string) => `webhookEndpoint=${encodeURIComponent(`${receiver.url}${path}`)}`;

  async function deploy(files: Record<string, string>, query = "") {
    const apps = `${runlet.local.baseUrl}/v2/projects/${runlet.local.projectId}/apps${query}`;
    const res = await fetch(apps, {
      method: "POST",
      headers: auth(),
      body: JSON.stringify({
        files: Object.entries(files).map(([path, text]) => ({
          path,
          contentBase64: Buffer.from(text).toString("base64"),
        })),
      }),
    });
    expect(res.status).toBe(201);
  }

  beforeAll(async () => {
    [runlet, receiver] = await Promise.all([sharedRunlet("webhooks"), startReceiver()]);
    await deploy(JOBS);
    await deploy(SITE);
  });

  afterAll(async () => {
    await runlet?.stop();
    await receiver?.close();
  });

  it("answers async=true with 202 and exactly {run_id}, then runs it in the background", async () => {
    const res = await run("/jobs/run?async=true", { body: JSON.stringify({ n: 1 }) });
    expect(res.status).toBe(202);
    const runId = res.headers.get("x-request-id");
    expect(await json(res)).toEqual({ run_id: runId });
    const done = await stateWhen("jobs", runId as string, (s) => s.status === "success");
    expect(done).toMatchObject({ run_id: runId, app: "jobs", function: "run", async: true });
    expect(done.run_time_ms).toBeGreaterThanOrEqual(0);
    expect(done).not.toHaveProperty("result"); // the caller of an async run gets no result

    // The runs index lists it, marked async.
    expect(await indexed(runId as string, "success")).toMatchObject({ async: true });
  });

  it("runs one that outlasts the hand-over: running, then ended by the host's report, and delivered", async () => {
    const res = await run(`/jobs/nap?async=true&${hook("/napped")}`, {
      body: JSON.stringify({ ms: 1_000 }),
    });
    expect(res.status).toBe(202);
    const runId = res.headers.get("x-request-id") as string;
    const running = await stateWhen("jobs", runId, (s) => s.status !== "queued");
    expect(running.status).toBe("running");
    expect(await indexed(runId, "running")).toMatchObject({ status: "running" });
    const [delivery] = await receiver.waitFor("/napped", 1);
    expect(JSON.parse(delivery?.body ?? "")).toMatchObject({
      run_id: runId,
      status: "success",
      result: { napped: 1_000 },
    });
    expect(await state("jobs", runId)).toMatchObject({ status: "success" });
    expect((await state("jobs", runId)).run_time_ms).toBeGreaterThanOrEqual(950);
    expect(await indexed(runId, "success")).toMatchObject({ status: "success" });
  });

  it("delivers an async run's result to its webhook, signed as the spec says", async () => {
    const secret = "whsec_e2e";
    const res = await run(`/jobs/run?async=true&${hook("/async-signed")}`, {
      headers: { "x-webhook-secret": secret },
      body: JSON.stringify({ name: "Ada" }),
    });
    expect(res.status).toBe(202);
    const runId = res.headers.get("x-request-id") as string;
    const [delivery] = await receiver.waitFor("/async-signed", 1);
    const body = JSON.parse(delivery?.body ?? "");
    expect(body).toEqual({
      run_id: runId,
      status: "success",
      result: { echo: { name: "Ada" }, async: true },
      run_time_ms: expect.any(Number),
      timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    const headers = delivery?.headers ?? {};
    expect(headers["x-request-id"]).toBe(runId);
    expect(headers["user-agent"]).toBe("Runlet-Webhooks/1"); // gateways refuse none at all
    const timestamp = headers["x-runlet-webhook-timestamp"] as string;
    const expected = createHmac("sha256", secret)
      .update(`${runId}.${timestamp}.${delivery?.body}`)
      .digest("hex");
    expect(headers["x-runlet-webhook-signature"]).toBe(`v1,${expected}`);
    // The receiver-side helper agrees, and refuses the same delivery with another secret.
    const check = { body: delivery?.body ?? "", headers: headers as Record<string, string> };
    expect(await verifyWebhook({ secret, ...check })).toMatchObject({ ok: true });
    expect(await verifyWebhook({ secret: "wrong", ...check })).toMatchObject({ ok: false });

    const after = await stateWhen("jobs", runId, (s) => s.webhook?.state === "delivered");
    expect(after.webhook).toMatchObject({ signed: true, attempts: [{ attempt: 1, status: 200 }] });
    expect(JSON.stringify(after)).not.toContain(secret);
  });

  it("signs with the secret as HTTP defines the field: without the spaces around it", async () => {
    // curl -H 'X-Webhook-Secret:   spaced   ' sends the spaces; fetch() would strip them here.
    const answer = await nodeRequest(
      `${runlet.local.apiUrl}/v4/${runlet.local.projectId}/jobs/run?async=true&${hook("/spaced")}`,
      { method: "POST", headers: { ...auth(), "x-webhook-secret": " \t spaced \t " } },
      (req) => req.end("{}"),
    );
    expect(answer.status).toBe(202);
    const [delivery] = await receiver.waitFor("/spaced", 1);
    const check = {
      body: delivery?.body ?? "",
      headers: delivery?.headers as Record<string, string>,
    };
    expect(await verifyWebhook({ secret: "spaced", ...check })).toMatchObject({ ok: true });
  });

  it("forwards a sync run's response to the webhook without changing the caller's answer", async () => {
    const res = await run(`/jobs/run?${hook("/sync")}`, { body: JSON.stringify({ x: 1 }) });
    expect(res.status).toBe(200);
    const answer = await json(res);
    expect(answer).toEqual({
      run_id: res.headers.get("x-request-id"),
      result: { echo: { x: 1 }, async: false },
      run_time_ms: expect.any(Number),
    });
    const [delivery] = await receiver.waitFor("/sync", 1);
    expect(JSON.parse(delivery?.body ?? "")).toMatchObject({
      run_id: answer.run_id,
      status: "success",
      result: answer.result,
    });
    expect(delivery?.headers["x-runlet-webhook-signature"]).toBeUndefined(); // no secret sent
    // Its view (the Worker's) and the runs index (the host's report) agree on its creation.
    const view = await stateWhen("jobs", answer.run_id, (s) => s.webhook?.state === "delivered");
    expect((await indexed(answer.run_id, "success", false))?.createdAt).toBe(view.created_at);

    const failed = await run(`/jobs/fail?${hook("/sync-fail")}`);
    expect(failed.status).toBe(500);
    const [failure] = await receiver.waitFor("/sync-fail", 1);
    expect(JSON.parse(failure?.body ?? "")).toMatchObject({
      status: "failure",
      error: { message: "it broke" },
    });
  });

  it("sends the host's callback to the Worker's own address, whatever Host its caller sent", async () => {
    // The callback carries the internal token: a caller's Host header must not choose its way.
    const spoofed = new URL(receiver.url).host;
    const answer = await nodeRequest(
      `${runlet.local.apiUrl}/v4/${runlet.local.projectId}/jobs/nap?async=true`,
      { method: "POST", headers: { ...auth(), host: spoofed } },
      (req) => req.end(JSON.stringify({ ms: 400 })), // past the host's 100 ms: a callback ends it
    );
    expect(answer.status).toBe(202);
    const runId = JSON.parse(answer.body).run_id as string;
    await stateWhen("jobs", runId, (s) => s.status === "success");
    const callback = `/internal/apps/${runlet.local.projectId}/jobs/runs/${runId}/complete`;
    expect(receiver.received(callback)).toEqual([]);
  });

  it("ends an async run without a webhook success whatever its result's size (nobody reads it)", async () => {
    const res = await run("/jobs/huge?async=true");
    expect(res.status).toBe(202);
    const runId = res.headers.get("x-request-id") as string;
    const done = await stateWhen(
      "jobs",
      runId,
      (s) => s.status !== "queued" && s.status !== "running",
    );
    expect(done).toMatchObject({ status: "success" });
  });

  it("delivers a failure for a sync answer it cannot deliver: over 10 MiB, or cut off", async () => {
    const big = await run(`/jobs/huge?${hook("/huge")}`);
    expect(big.status).toBe(200);
    expect((await big.text()).length).toBeGreaterThan(11 * 1024 * 1024);
    const [tooBig] = await receiver.waitFor("/huge", 1);
    expect(JSON.parse(tooBig?.body ?? "")).toMatchObject({
      status: "failure",
      error: { message: expect.stringMatching(/^the function's result is larger than 10 MiB/) },
    });

    const cut = await run(`/site/cut?${hook("/cut")}`, { method: "GET", body: undefined });
    await cut.text().catch(() => "");
    const [broken] = await receiver.waitFor("/cut", 1);
    expect(JSON.parse(broken?.body ?? "")).toMatchObject({
      status: "failure",
      error: { message: "the app's answer was cut off" },
    });
  });

  it("delivers a failure for a sync run whose process died mid-call, as it does for an async one", async () => {
    const died = await run(`/jobs/die?${hook("/died")}`);
    expect(died.status).toBe(502);
    const { run_id: runId } = (await died.json()) as { run_id: string };
    const [delivery] = await receiver.waitFor("/died", 1);
    expect(JSON.parse(delivery?.body ?? "")).toMatchObject({
      run_id: runId,
      status: "failure",
      error: {
        message: expect.stringMatching(/^the function's process exited unexpectedly \(code 3\)/),
      },
    });
    // The run's view has its delivery, as any run with a webhook has.
    const view = await stateWhen("jobs", runId, (v) => v.webhook?.state === "delivered");
    expect(view.status).toBe("failure");
    // And the host it failed at, as the runs index has it (it said null: the operator's round).
    expect(view.host).toMatch(/^hst_/);
    expect(view.host).toBe((await indexed(runId, "failure", false))?.host);
  });

  it("times a streamed sync answer to its end, in its delivery and in the run's view", async () => {
    const res = await run(`/site/events?${hook("/events")}`, { method: "GET", body: undefined });
    expect(await res.text()).toBe("data: 0\n\ndata: 1\n\ndata: 2\n\n");
    const runId = res.headers.get("x-request-id") as string;
    const [delivery] = await receiver.waitFor("/events", 1);
    const delivered = JSON.parse(delivery?.body ?? "") as { run_time_ms: number };
    // Three writes 300 ms apart: it said the time to the answer's first bytes (a few ms).
    expect(delivered.run_time_ms).toBeGreaterThanOrEqual(600);
    expect((await state("site", runId)).run_time_ms).toBe(delivered.run_time_ms);
  });

  it("delivers a custom app's answer with its status code, sync and async", async () => {
    const res = await run(`/site/things?a=1&${hook("/custom")}`, {
      method: "GET",
      body: undefined,
      headers: { "x-webhook-secret": "kept-from-the-app" },
    });
    expect(res.status).toBe(201);
    // Runlet's parameter and the webhook secret are not the app's.
    expect(await json(res)).toEqual({ made: true, url: "/things?a=1", secret: null });
    const [delivery] = await receiver.waitFor("/custom", 1);
    expect(JSON.parse(delivery?.body ?? "")).toMatchObject({
      status: "success",
      status_code: 201,
      result: { made: true, url: "/things?a=1", secret: null },
    });
    // Its view names the host that served it, as the runs index does (it had said null).
    const syncId = res.headers.get("x-request-id") as string;
    const served = await stateWhen("site", syncId, (s) => s.webhook?.state === "delivered");
    expect(served.host).toBe((await indexed(syncId, "success", false, "site"))?.host);
    expect(served.host).toMatch(/^hst_/);
    const secret = "whsec_custom";
    const queued = await run(`/site/jobs/9?async=true&b=2&${hook("/custom-async")}`, {
      method: "PUT",
      body: "raw",
      headers: { "x-webhook-secret": secret },
    });
    expect(queued.status).toBe(202);
    const runId = queued.headers.get("x-request-id") as string;
    expect(await json(queued)).toEqual({ run_id: runId });
    const [later] = await receiver.waitFor("/custom-async", 1);
    expect(JSON.parse(later?.body ?? "")).toMatchObject({
      run_id: runId,
      status: "success",
      status_code: 201,
      result: { made: true, url: "/jobs/9?b=2", secret: null }, // Runlet's, not the app's
    });
    expect(
      await verifyWebhook({
        secret,
        body: later?.body ?? "",
        headers: later?.headers as Record<string, string>,
      }),
    ).toMatchObject({ ok: true });
    const done = await stateWhen("site", runId, (s) => s.status === "success");
    // The view says how the app answered (its body stays the webhook's).
    expect(done).toMatchObject({ async: true, function: "PUT /jobs/9", status_code: 201 });
    expect(done).not.toHaveProperty("result");
  });

  it("delivers a compressed answer decoded, and one that is not text as base64, sync and async", async () => {
    const delivered = async (path: string, query: string) => {
      const res = await run(`/site${path}?${query}${hook(path)}`, {
        method: "GET",
        body: undefined,
      });
      await res.arrayBuffer();
      const [delivery] = await receiver.waitFor(path, 1);
      return JSON.parse(delivery?.body ?? "");
    };
    // workerd asks for br, gzip on every request; an async run asks the app for identity.
    expect(await delivered("/auto/async", "async=true&")).toMatchObject({
      status: "success",
      result: { items: [1, 2, 3], seen: "identity" },
    });
    expect(await delivered("/auto/sync", "")).toMatchObject({
      status: "success",
      result: { items: [1, 2, 3], seen: "br, gzip" }, // workerd decoded it on its way
    });
    for (const [path, query] of [
      ["/png/async", "async=true&"],
      ["/png/sync", ""],
    ] as const) {
      const body = await delivered(path, query);
      expect(body).toMatchObject({
        status: "success",
        status_code: 200,
        result_encoding: "base64",
      });
      expect(Buffer.from(body.result, "base64").toString("hex")).toBe(
        "89504e470d0a1a0a0000000d49484452",
      );
    }
    // A JSON answer is as it was: parsed, no encoding named.
    expect(await delivered("/things/plain", "async=true&")).not.toHaveProperty("result_encoding");
  });

  it("follows every row of the retry table (spec 6.4) against a real receiver", async () => {
    const rows: Array<[string, Array<number | "drop" | "hang">, number, string]> = [
      ["/r-200", [200], 1, "delivered"],
      ["/r-404-then-200", [404, 200], 2, "delivered"],
      ["/r-404-thrice", [404, 404, 404], 3, "failed"],
      ["/r-400", [400], 1, "failed"],
      ["/r-500", [500], 1, "failed"],
      ["/r-302-thrice", [302, 302, 302], 3, "failed"],
      ["/r-drop-then-200", ["drop", 200], 2, "delivered"],
      ["/r-timeout-then-200", ["hang", 200], 2, "delivered"],
    ];
    const runs = await Promise.all(
      rows.map(async ([path, behaviours]) => {
        receiver.script(path, behaviours);
        const res = await run(`/jobs/run?${hook(path)}`);
        expect(res.status).toBe(200);
        return res.headers.get("x-request-id") as string;
      }),
    );
    const ended = await Promise.all(
      runs.map((runId) =>
        stateWhen("jobs", runId, (s) => s.webhook && s.webhook.state !== "pending"),
      ),
    );
    for (const [i, [path, , attempts, outcome]] of rows.entries()) {
      const webhook = ended[i]?.webhook;
      expect({ path, state: webhook.state, attempts: webhook.attempts.length }).toEqual({
        path,
        state: outcome,
        attempts,
      });
      expect(receiver.received(path)).toHaveLength(attempts);
      for (const attempt of webhook.attempts.slice(1)) expect(attempt.at).toBeTruthy();
      // Each attempt says whether another follows: the last of a failed delivery is final.
      const verdicts = webhook.attempts.map((a: { verdict: string }) => a.verdict);
      if (outcome === "failed") expect(verdicts.at(-1)).toBe("final");
      expect(verdicts.slice(0, -1).every((v: string) => v === "retry")).toBe(true);
    }
    expect(ended[7]?.webhook.attempts[0].error).toMatch(/timeout/);
    expect(ended[6]?.webhook.attempts[0].status).toBeUndefined();
    expect(receiver.received("/followed")).toHaveLength(0); // redirects are not followed
    // Attempts are at most 5 s apart.
    const gaps = receiver
      .received("/r-404-thrice")
      .map((d, i, all) => (i ? d.at - (all[i - 1]?.at ?? 0) : 0));
    expect(Math.max(...gaps)).toBeLessThanOrEqual(5_500);
  }, 90_000);

  it("cancels a running async run with DELETE; no delivery, and a second DELETE is 409", async () => {
    const res = await run(`/jobs/slow?async=true&${hook("/cancelled")}`);
    const runId = res.headers.get("x-request-id") as string;
    await stateWhen("jobs", runId, (s) => s.status === "running");
    const cancel = await fetch(runUrl("jobs", runId), { method: "DELETE", headers: auth() });
    expect(cancel.status).toBe(200);
    expect(await json(cancel)).toMatchObject({ status: "cancelled", async: true });
    expect((await state("jobs", runId)).status).toBe("cancelled");
    const again = await fetch(runUrl("jobs", runId), { method: "DELETE", headers: auth() });
    expect(again.status).toBe(409);
    await new Promise((r) => setTimeout(r, 500));
    expect(receiver.received("/cancelled")).toHaveLength(0);
  });

  it("refuses bad parameters with 400, and an unknown function's async call with 404 once the functions are known", async () => {
    const bad = await run("/jobs/run?webhookEndpoint=not-a-url");
    expect(bad.status).toBe(400);
    expect((await json(bad)).message).toMatch(/webhookEndpoint/);
    expect((await run("/jobs/run?async=yes")).status).toBe(400);
    // The deploy's start check found the functions: 404 at once, as for a sync call (it was
    // 202, then a run that failed).
    const missing = await run(`/jobs/nope?async=true&${hook("/nope")}`);
    expect(missing.status).toBe(404);
    expect((await json(missing)).message).toMatch(
      /^app 'jobs' has no function 'nope' \(it exports: /,
    );
    // Deployed without the check, they are known once a replica has loaded it: the run is
    // accepted and fails, delivered.
    await deploy(
      { "runlet.toml": 'name = "blind"', "main.mjs": "export const run = () => 1;\n" },
      "?startCheck=false",
    );
    const unchecked = await run(`/blind/nope?async=true&${hook("/nope")}`);
    expect(unchecked.status).toBe(202);
    const runId = unchecked.headers.get("x-request-id") as string;
    const failed = await stateWhen("blind", runId, (s) => s.status === "failure");
    expect(failed.error.message).toBe("app 'blind' has no function 'nope' (it exports: run)");
    const [delivery] = await receiver.waitFor("/nope", 1);
    expect(JSON.parse(delivery?.body ?? "")).toMatchObject({ run_id: runId, status: "failure" });
    const unknown = await fetch(runUrl("jobs", "run_00000000000000000000000000"), {
      headers: auth(),
    });
    expect(unknown.status).toBe(404);
  });
});
