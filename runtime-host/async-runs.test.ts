// Async runs through the real host: submitted with a callback, limited by the app's
// response_grace_period, cancellable through ctx.signal, and askable afterwards.

import { afterEach, beforeEach, describe, expect, it } from "vitest";
import * as z from "zod/mini";
import { HEADER } from "../common/consts.ts";
import { type HostRun, hostRunSchema } from "../common/protocol/host.ts";
import type { RunningHost } from "./server.ts";
import {
  configOf,
  eventually,
  hostClient,
  newHome,
  type Received,
  removeHome,
  startReceiver,
  startTestHost,
  TOKEN,
} from "./test-support.ts";

const APP = {
  "main.mjs": `
let sawAbort = false;
export async function work(input, ctx) {
  await new Promise((resolve) => setTimeout(resolve, input.ms ?? 0));
  return { async: ctx.async, runId: ctx.runId, doubled: input.n * 2 };
}
export async function waitForCancel(input, ctx) {
  await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve));
  sawAbort = true;
  return "stopped";
}
export const sawCancel = () => sawAbort;
export function fail() {
  throw new Error("no luck");
}
export const big = (input) => "x".repeat(input.bytes);
`,
};

/** What the receiving side reads of a body: its HostRun fields, none unknown (or it throws). */
const asSent = (body: unknown) => z.strictObject(hostRunSchema.shape).parse(body);

let home: string;
let host: RunningHost;
let receiver: Awaited<ReturnType<typeof startReceiver<HostRun>>>;
let callbackUrl: string;
let received: Received<HostRun>[];

beforeEach(async () => {
  home = await newHome();
  host = await startTestHost(home);
  receiver = await startReceiver<HostRun>();
  received = receiver.received;
  callbackUrl = `${receiver.url}/runs/done`;
});

afterEach(async () => {
  await host.close();
  await receiver.close();
  await removeHome(home);
});

async function deploy(extra: Record<string, unknown> = {}) {
  const res = await hostClient(host.url).deploy("p", "jobs", 1, APP, configOf("jobs", extra));
  expect(res.status).toBe(200);
}

const submit = (fn: string, body: unknown, runId: string, headers: Record<string, string> = {}) =>
  fetch(`${host.url}/internal/async/p/jobs/${fn}`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${TOKEN}`,
      [HEADER.runId]: runId,
      [HEADER.callbackUrl]: callbackUrl,
      ...headers,
    },
    body: JSON.stringify(body),
  });

const runState = async (runId: string, method = "GET") => {
  const res = await fetch(`${host.url}/internal/runs/${runId}`, {
    method,
    headers: { authorization: `Bearer ${TOKEN}` },
  });
  return { status: res.status, body: (await res.json()) as HostRun & { message?: string } };
};

describe("async runs on the host", () => {
  it("answers 202 at once, runs with ctx.async, and reports the result to the callback", async () => {
    await deploy();
    const res = await submit("work", { n: 21, ms: 200 }, "run_a1");
    expect(res.status).toBe(202); // answered once it started
    const answered = (await res.json()) as HostRun;
    expect(answered).toMatchObject({ runId: "run_a1", status: "running", fn: "work" });
    expect(asSent(answered)).toEqual(answered); // the protocol's HostRun, nothing more
    expect(Number(answered.deadlineAt) - Number(answered.startedAt)).toBe(900_000);

    await eventually(
      async () => received.length,
      (n) => n === 1,
    );
    const [delivery] = received;
    expect(delivery?.auth).toBe(`Bearer ${TOKEN}`);
    expect(asSent(delivery?.body)).toEqual(delivery?.body);
    expect(delivery?.body).toMatchObject({
      runId: "run_a1",
      status: "success",
      result: { async: true, runId: "run_a1", doubled: 42 },
    });
    expect(delivery?.body.runTimeMs).toBeGreaterThanOrEqual(150);
    // The Worker took the end: the host keeps the run's state a while, but not its result (it
    // kept every result for an hour, so its memory grew with the rate and size of results).
    const state = { ...delivery?.body };
    delete state.result;
    await eventually(
      async () => (await runState("run_a1")).body,
      (body) => !("result" in body),
    );
    expect((await runState("run_a1")).body).toEqual(state);
  });

  it("keeps the result of a run whose callback was lost, for the Worker to ask", async () => {
    await deploy();
    const closed = await startReceiver<HostRun>();
    await closed.close(); // nothing answers there
    const res = await submit("work", { n: 2, ms: 200 }, "run_lost", {
      [HEADER.callbackUrl]: `${closed.url}/runs/done`,
    });
    expect(res.status).toBe(202);
    await new Promise((r) => setTimeout(r, 6_000)); // its three tries, over about 5 s
    expect((await runState("run_lost")).body).toMatchObject({
      status: "success",
      result: { doubled: 4 },
    });
  }, 15_000);

  it("reports a throw as a failure with the message", async () => {
    await deploy();
    await submit("fail", null, "run_a2");
    await eventually(
      async () => received.length,
      (n) => n === 1,
    );
    expect(received[0]?.body).toMatchObject({ status: "failure", error: { message: "no luck" } });
  });

  it("fails a run whose result is over 10 MiB, saying so; 10 MiB is a success", async () => {
    await deploy();
    const limit = 10 * 1024 * 1024 - 2; // the JSON string's two quotes
    await submit("big", { bytes: limit + 1 }, "run_big");
    await submit("big", { bytes: limit }, "run_fits");
    // Two results of 10 MiB made, copied and sent: seconds on a busy machine.
    await eventually(
      async () => received.length,
      (n) => n === 2,
      30_000,
    );
    const ends = Object.fromEntries(received.map((r) => [r.body.runId, r.body]));
    expect(ends.run_big).toMatchObject({
      status: "failure",
      error: {
        message: `the function's result is larger than 10 MiB (${limit + 3} bytes as JSON): an async run's result goes to its webhook, which takes at most 10 MiB`,
      },
    });
    expect(ends.run_fits).toMatchObject({ status: "success" });
    expect(String(ends.run_fits?.result).length).toBe(limit);
  });

  it("keeps no result of a run without a webhook (X-Runlet-No-Result), so any size is a success", async () => {
    await deploy();
    const noResult = { [HEADER.noResult]: "1" };
    await submit("big", { bytes: 11 * 1024 * 1024 }, "run_unread", noResult);
    await submit("work", { n: 2 }, "run_small", noResult);
    await eventually(
      async () => received.length,
      (n) => n === 2,
    );
    const ends = Object.fromEntries(received.map((r) => [r.body.runId, r.body]));
    expect(ends.run_unread).toMatchObject({ status: "success", result: null });
    expect(ends.run_small).toMatchObject({ status: "success", result: null });
  });

  it("fails a run that outlives response_grace_period, and stops it", async () => {
    await deploy({ response_grace_period: 1 });
    await submit("work", { n: 1, ms: 5_000 }, "run_a3");
    await eventually(
      async () => received.length,
      (n) => n === 1,
      4_000,
    );
    expect(received[0]?.body).toMatchObject({ status: "failure" });
    expect(received[0]?.body.error?.message).toMatch(/response_grace_period \(1 s\)/);
  });

  it("limits a run that starts after a redeploy by the new version's response_grace_period, not the one it was handed over with", async () => {
    const scaling = { max_replicas: 1, replica_concurrency: 1 };
    await deploy({ scaling }); // 900 s
    await submit("waitForCancel", null, "run_hold"); // answered once started: the one slot
    const next = submit("work", { n: 1, ms: 5_000 }, "run_next");
    await eventually(
      async () => (await runState("run_next")).status,
      (status) => status === 200,
    );
    // The redeploy lowers the limit while run_next, handed over under v1, waits for the slot.
    const v2 = configOf("jobs", { response_grace_period: 1, scaling });
    expect((await hostClient(host.url).deploy("p", "jobs", 2, APP, v2)).status).toBe(200);
    expect((await runState("run_next")).body.status).toBe("queued");
    expect((await runState("run_hold", "DELETE")).status).toBe(200);

    const started = (await (await next).json()) as HostRun;
    expect(started).toMatchObject({ runId: "run_next", status: "running" });
    expect(Number(started.deadlineAt) - Number(started.startedAt)).toBe(1_000);
    const end = await eventually(
      async () => received.find((r) => r.body.runId === "run_next")?.body,
      (body) => body !== undefined,
      30_000,
    );
    expect(end?.status).toBe("failure");
    expect(end?.error?.message).toMatch(/response_grace_period \(1 s\)/);
  });

  it("says why a run failed when another run on its replica outlived its limit and the replica was stopped", async () => {
    await deploy({
      response_grace_period: 1,
      scaling: { replica_concurrency: 2, max_replicas: 1 },
    });
    await submit("work", { n: 1, ms: 5_000 }, "run_over");
    await new Promise((r) => setTimeout(r, 300));
    await submit("work", { n: 1, ms: 3_000 }, "run_beside");
    await eventually(
      async () => received.length,
      (n) => n === 2,
      4_000,
    );
    const ends = Object.fromEntries(received.map((r) => [r.body.runId, r.body]));
    expect(ends.run_over?.error?.message).toMatch(/response_grace_period \(1 s\)/);
    // It said only "exited unexpectedly (signal SIGKILL)".
    expect(ends.run_beside?.error?.message).toBe(
      "the function's process was stopped: another call on the same replica ran past its 1 s limit",
    );
  });

  it("cancels a running run: ctx.signal aborts, no callback, the state says cancelled", async () => {
    await deploy({ scaling: { max_replicas: 1, replica_concurrency: 2 } });
    await submit("waitForCancel", null, "run_a4");
    const cancelled = await runState("run_a4", "DELETE");
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.status).toBe("cancelled");
    const client = hostClient(host.url);
    await eventually(
      async () => (await client.invoke("p", "jobs", "sawCancel")).body.result,
      (saw) => saw === true,
    );
    expect((await runState("run_a4")).body.status).toBe("cancelled");
    await new Promise((r) => setTimeout(r, 100));
    expect(received).toEqual([]);
    expect((await runState("run_a4", "DELETE")).status).toBe(200); // cancelling twice is harmless
  });

  it("answers a run that ends within X-Runlet-Wait-Ms with its end (200), and sends no callback", async () => {
    await deploy();
    // Warm: the wait is not to be spent on the replica's start.
    expect(
      (await hostClient(host.url).invoke("p", "jobs", "work", JSON.stringify({ n: 0 }))).status,
    ).toBe(200);
    const res = await submit("work", { n: 2, ms: 20 }, "run_w1", { [HEADER.waitMs]: "1000" });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({
      runId: "run_w1",
      status: "success",
      result: { doubled: 4 },
    });
    const failed = await submit("fail", null, "run_w2", { [HEADER.waitMs]: "1000" });
    expect(failed.status).toBe(200);
    expect(await failed.json()).toMatchObject({ status: "failure", error: { message: "no luck" } });
    await new Promise((r) => setTimeout(r, 100));
    expect(received).toEqual([]);
  });

  it("answers a run that outlasts the wait 202, and reports its end to the callback", async () => {
    await deploy();
    const res = await submit("work", { n: 3, ms: 300 }, "run_w3", { [HEADER.waitMs]: "50" });
    expect(res.status).toBe(202);
    expect(await res.json()).toMatchObject({ runId: "run_w3", status: "running" });
    const [report] = await eventually(
      async () => received,
      (r) => r.length === 1,
    );
    expect(report?.body).toMatchObject({ runId: "run_w3", status: "success" });
  });

  it("reports the end to the callback when the submitter goes away during the wait", async () => {
    await deploy();
    const abort = new AbortController();
    const submitted = fetch(`${host.url}/internal/async/p/jobs/work`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${TOKEN}`,
        [HEADER.runId]: "run_w4",
        [HEADER.callbackUrl]: callbackUrl,
        [HEADER.waitMs]: "1000",
      },
      body: JSON.stringify({ n: 4, ms: 300 }),
      signal: abort.signal,
    });
    await eventually(
      () => runState("run_w4"),
      (r) => r.body.status === "running", // once it started; while queued it would be withdrawn
    );
    abort.abort();
    await expect(submitted).rejects.toThrow();
    const [report] = await eventually(
      async () => received,
      (r) => r.length === 1,
    );
    expect(report?.body).toMatchObject({ runId: "run_w4", status: "success" });
  });

  it("refuses a reused run id (409 with the run), a bad callback URL and unknown runs", async () => {
    await deploy();
    expect((await submit("work", { n: 1 }, "run_a5")).status).toBe(202);
    const again = await submit("work", { n: 1 }, "run_a5");
    expect(again.status).toBe(409);
    expect(await again.json()).toMatchObject({
      message: expect.stringMatching(/^run 'run_a5' exists already/),
      run: { runId: "run_a5", fn: "work" },
    });
    const bad = await submit("work", { n: 1 }, "run_a6", { [HEADER.callbackUrl]: "ftp://x" });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { message: string }).message).toMatch(/absolute http\(s\) URL/);
    const badWait = await submit("work", { n: 1 }, "run_a6", { [HEADER.waitMs]: "soon" });
    expect(badWait.status).toBe(400);
    expect(((await badWait.json()) as { message: string }).message).toMatch(/milliseconds/);
    expect((await runState("run_nope")).status).toBe(404);
    expect((await runState("run_a6")).status).toBe(404); // the refused one never existed
    await eventually(
      () => runState("run_a5"),
      (r) => r.body.status === "success",
    );
    const late = await runState("run_a5", "DELETE");
    expect(late.status).toBe(409); // an ended run cannot be cancelled
    expect(late.body.message).toMatch(/has ended: success/);
  });
});

describe("async runs of a custom app on the host", () => {
  const SERVER = `require("node:http").createServer((req, res) => {
  if (req.url === "/health") return res.end("ok");
  let body = "";
  req.on("data", (c) => { body += c; });
  req.on("end", () => {
    if (req.url === "/huge") return res.end("x".repeat(11 * 1024 * 1024));
    const status = req.url.startsWith("/broken") ? 503 : 201;
    res.writeHead(status, { "content-type": "application/json" });
    if (req.url === "/hang") return;
    res.end(JSON.stringify({ method: req.method, url: req.url, body, runId: req.headers["x-runlet-run-id"] ?? null, callback: req.headers["x-runlet-callback-url"] ?? null, pid: process.pid }));
  });
}).listen(Number(process.env.PORT), "127.0.0.1");`;

  const submitHttp = (
    path: string,
    runId: string,
    init: RequestInit = {},
    headers: Record<string, string> = {},
  ) =>
    fetch(`${host.url}/internal/async-http/p/web${path}`, {
      ...init,
      headers: {
        authorization: `Bearer ${TOKEN}`,
        [HEADER.runId]: runId,
        [HEADER.callbackUrl]: callbackUrl,
        ...headers,
      },
    });

  beforeEach(async () => {
    const config = configOf("web", {
      runtime: "custom",
      custom: { entrypoint: ["node", "server.js"] },
    });
    const res = await hostClient(host.url).deploy("p", "web", 1, { "server.js": SERVER }, config);
    expect(res.status).toBe(200);
  });

  it("sends the request in the background and reports the app's answer to the callback", async () => {
    const res = await submitHttp("/things/7?x=1", "run_h1", { method: "PUT", body: "payload" });
    expect(res.status).toBe(202);
    const [report] = await eventually(
      async () => received,
      (r) => r.length === 1,
    );
    expect(report?.body).toMatchObject({
      runId: "run_h1",
      fn: "PUT /things/7",
      status: "success",
      http: { status_code: 201, content_type: "application/json" },
    });
    // The app got the request as it came, its run id, and none of the host's own headers.
    expect(JSON.parse(report?.body.http?.body ?? "{}")).toEqual({
      method: "PUT",
      url: "/things/7?x=1",
      body: "payload",
      runId: "run_h1",
      callback: null,
      pid: expect.any(Number),
    });
  });

  it("closes the request of a run past response_grace_period, and keeps the app's server serving", async () => {
    const config = configOf("web", {
      runtime: "custom",
      custom: { entrypoint: ["node", "server.js"] },
      response_grace_period: 1,
    });
    await hostClient(host.url).deploy("p", "web", 2, { "server.js": SERVER }, config);
    const pidOf = async (runId: string) => {
      await submitHttp("/pid", runId, { method: "POST", body: "" });
      const done = await eventually(
        async () => received.find((r) => r.body.runId === runId),
        (r) => r !== undefined,
      );
      return JSON.parse(done?.body.http?.body ?? "{}").pid as number;
    };
    const before = await pidOf("run_p1");
    await submitHttp("/hang", "run_hang", { method: "POST", body: "" });
    const hung = await eventually(
      async () => received.find((r) => r.body.runId === "run_hang"),
      (r) => r !== undefined,
      4_000,
    );
    expect(hung?.body.error?.message).toMatch(/response_grace_period \(1 s\)/);
    expect(hung?.body.runTimeMs).toBeGreaterThanOrEqual(1_000); // it ran until it was stopped
    // The replica was failed (and restarted) with every request it was serving.
    expect(await pidOf("run_p2")).toBe(before);
  });

  it("keeps no answer body of a run without a webhook, so any size is a success; one kept is bounded", async () => {
    await submitHttp("/huge", "run_unread", { method: "GET" }, { [HEADER.noResult]: "1" });
    await submitHttp("/huge", "run_read", { method: "GET" });
    await eventually(
      async () => received.length,
      (n) => n === 2,
    );
    const ends = Object.fromEntries(received.map((r) => [r.body.runId, r.body]));
    expect(ends.run_unread).toMatchObject({
      status: "success",
      http: { status_code: 200, body: "" },
    });
    expect(ends.run_read).toMatchObject({
      status: "failure",
      error: { message: "the app's answer is larger than 10 MiB" },
    });
  });

  it("ends as failure when the app answers 500 or more, with its answer kept", async () => {
    await submitHttp("/broken", "run_h2", { method: "POST", body: "{}" });
    const [report] = await eventually(
      async () => received,
      (r) => r.length === 1,
    );
    expect(report?.body).toMatchObject({
      status: "failure",
      error: { message: "the app answered 503" },
      http: { status_code: 503 },
    });
  });
});
