// The host reports the sync runs it served and the async runs it ran to the runs index, gathered
// into batches; a real receiver plays the control plane's POST /internal/runs.

import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, beforeEach, expect, it } from "vitest";
import { HEADER } from "../common/consts.ts";
import { newId } from "../common/ids.ts";
import type { HostRun } from "../common/protocol/host.ts";
import { RunReports } from "./run-reports.ts";
import type { RunningHost } from "./server.ts";
import {
  configOf,
  eventually,
  hostClient,
  newHome,
  removeHome,
  startTestHost,
  TOKEN,
} from "./test-support.ts";

let home: string;
let host: RunningHost;
let control: Server;
const batches: { auth: string | undefined; runs: Record<string, unknown>[] }[] = [];

beforeEach(async () => {
  batches.length = 0;
  control = createServer((req, res) => {
    let text = "";
    req.on("data", (c) => {
      text += c;
    });
    req.on("end", () => {
      if (req.method === "POST" && req.url === "/internal/runs")
        batches.push({ auth: req.headers.authorization, runs: JSON.parse(text).runs });
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => control.listen(0, "127.0.0.1", resolve));
  home = await newHome();
  host = await startTestHost(home, {
    controlPlaneUrl: `http://127.0.0.1:${(control.address() as AddressInfo).port}`,
  });
});

afterEach(async () => {
  await host.close();
  await new Promise((resolve) => control.close(resolve));
  await removeHome(home);
});

const reported = () => batches.flatMap((b) => b.runs);

it("reports the runs it answered, in batches, with the internal token", async () => {
  const client = hostClient(host.url);
  await client.deploy("p", "fns", 1, {
    "main.mjs": "export const ok = () => 1; export const bad = () => { throw new Error('x'); };",
  });
  const [ok, bad, missing] = [newId("run"), newId("run"), newId("run")];
  await Promise.all([
    client.invoke("p", "fns", "ok", undefined, { [HEADER.runId]: ok }),
    client.invoke("p", "fns", "bad", undefined, { [HEADER.runId]: bad }),
    client.invoke("p", "fns", "nope", undefined, { [HEADER.runId]: missing }),
    client.invoke("p", "fns", "ok", undefined, { [HEADER.runId]: "not-a-run-id" }),
  ]);
  const runs = await eventually(
    async () => reported(),
    (r) => r.length >= 2,
  );
  await new Promise((r) => setTimeout(r, 100)); // nothing else comes
  expect(reported()).toHaveLength(2); // an unknown function is the Worker's to report; a foreign id is no run
  expect(batches.every((b) => b.auth === `Bearer ${TOKEN}`)).toBe(true);
  const byId = new Map(runs.map((r) => [r.id, r]));
  expect(byId.get(ok)).toMatchObject({
    projectId: "p",
    app: "fns",
    function: "ok",
    async: false,
    status: "success",
    runTimeMs: expect.any(Number),
  });
  expect(byId.get(bad)).toMatchObject({ function: "bad", status: "failure" });
  // The run's creation time is the one its id says (the Worker's), not the host's.
  expect(Number(byId.get(ok)?.createdAt)).toBeLessThanOrEqual(Number(byId.get(ok)?.finishedAt));
});

it("reports a function's own status_code, as a custom app's answer is: the index says 'answered 404'", async () => {
  const client = hostClient(host.url);
  await client.deploy("p", "codes", 1, {
    "main.mjs": [
      "export const missing = () => ({ status_code: 404, message: 'no such item' });",
      "export const made = () => ({ status_code: 201 });",
      "export const odd = () => ({ status_code: 99 });",
      "export const plain = () => ({ ok: true });",
    ].join("\n"),
  });
  const ids = { missing: newId("run"), made: newId("run"), odd: newId("run"), plain: newId("run") };
  for (const [fn, runId] of Object.entries(ids))
    await client.invoke("p", "codes", fn, undefined, { [HEADER.runId]: runId });
  const runs = await eventually(
    async () => reported(),
    (r) => r.length >= 4,
  );
  const byId = new Map(runs.map((r) => [r.id, r]));
  expect(byId.get(ids.missing)).toMatchObject({ status: "success", statusCode: 404 });
  expect(byId.get(ids.made)).toMatchObject({ status: "success", statusCode: 201 });
  // Not a status the call could answer with (it answered 200), and no status_code at all.
  expect(byId.get(ids.odd)).not.toHaveProperty("statusCode");
  expect(byId.get(ids.plain)).not.toHaveProperty("statusCode");
});

it("reports a custom app's requests by method and path, never the query", async () => {
  const server = `require("node:http").createServer((req, res) => {
  res.writeHead(req.url.startsWith("/boom") ? 500 : 200).end("ok");
}).listen(Number(process.env.PORT), "127.0.0.1");`;
  const config = configOf("web", {
    runtime: "custom",
    custom: { entrypoint: ["node", "server.js"], healthcheck: "/" },
  });
  await hostClient(host.url).deploy("p", "web", 1, { "server.js": server }, config);
  const [fine, boom] = [newId("run"), newId("run")];
  for (const [runId, path] of [
    [fine, "/items/1?token=secret"],
    [boom, "/boom"],
  ] as const) {
    const res = await fetch(`${host.url}/internal/http/p/web${path}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${TOKEN}`, [HEADER.runId]: runId },
    });
    await res.arrayBuffer();
  }
  const runs = await eventually(
    async () => reported(),
    (r) => r.length === 2,
  );
  const byId = new Map(runs.map((r) => [r.id, r]));
  expect(byId.get(fine)).toMatchObject({ function: "DELETE /items/1", status: "success" });
  expect(byId.get(boom)).toMatchObject({ function: "DELETE /boom", status: "failure" });
  expect(JSON.stringify(runs)).not.toContain("secret");
});

it("says why a custom app's request failed when its answer did not end: caller gone, app cut off, limit", async () => {
  await host.close();
  host = await startTestHost(home, {
    controlPlaneUrl: `http://127.0.0.1:${(control.address() as AddressInfo).port}`,
    limits: { callTimeoutMs: 1_000 },
  });
  const server = `require("node:http").createServer((req, res) => {
  if (req.url === "/health") return res.end("ok");
  res.writeHead(200, { "content-type": "text/event-stream" });
  res.write("data: 0\\n\\n");
  if (req.url === "/crash") return setTimeout(() => process.exit(1), 50);
  const drip = setInterval(() => res.write("data: more\\n\\n"), 50);
  res.on("close", () => clearInterval(drip));
}).listen(Number(process.env.PORT), "127.0.0.1");`;
  const config = configOf("web", {
    runtime: "custom",
    custom: { entrypoint: ["node", "server.js"], healthcheck: "/health" },
  });
  await hostClient(host.url).deploy("p", "web", 1, { "server.js": server }, config);
  const [left, crashed, slow] = [newId("run"), newId("run"), newId("run")];
  const send = async (path: string, runId: string, signal?: AbortSignal) => {
    const res = await fetch(`${host.url}/internal/http/p/web${path}`, {
      headers: { authorization: `Bearer ${TOKEN}`, [HEADER.runId]: runId },
      signal,
    });
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    await reader.read(); // the first event
    return reader;
  };
  const caller = new AbortController();
  await send("/events", left, caller.signal);
  caller.abort(); // the caller leaves mid-stream
  await (await send("/crash", crashed)).closed.catch(() => undefined);
  await (await send("/events", slow)).closed.catch(() => undefined); // past the 1 s limit
  // Their ends (the one cut at the 1 s limit may have been listed running first).
  const ends = await eventually(
    async () => reported().filter((r) => r.status !== "running"),
    (r) => r.length === 3,
  );
  const byId = new Map(ends.map((r) => [r.id, r]));
  expect(byId.get(left)).toMatchObject({
    status: "failure",
    error: "the caller went away before the answer ended",
  });
  expect(byId.get(crashed)).toMatchObject({ status: "failure" });
  expect(byId.get(crashed)?.error).toMatch(/^the app's answer was cut off: /);
  expect(byId.get(slow)).toMatchObject({
    status: "failure",
    error: "the app's answer did not end within 1 s, the synchronous limit: it was cut off there",
  });
});

it("reports an async run only once it runs past the wait: never its end (its shard reports that), never a quick one", async () => {
  const client = hostClient(host.url);
  await client.deploy("p", "jobs", 1, {
    "main.mjs": `export const nap = (input, ctx) => new Promise((resolve) => {
      const timer = setTimeout(() => resolve(input.ms), input.ms);
      ctx.signal.addEventListener("abort", () => { clearTimeout(timer); resolve("stopped"); });
    });`,
  });
  // Warm: the quick run's wait is not to be spent on the replica's start.
  expect((await client.invoke("p", "jobs", "nap", JSON.stringify({ ms: 0 }))).status).toBe(200);
  const submit = (runId: string, ms: number, waitMs: number) =>
    fetch(`${host.url}/internal/async/p/jobs/nap`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${TOKEN}`,
        [HEADER.runId]: runId,
        [HEADER.waitMs]: String(waitMs),
      },
      body: JSON.stringify({ ms }),
    });
  const [quick, long, cancelled] = [newId("run"), newId("run"), newId("run")];
  expect((await submit(quick, 1, 1_000)).status).toBe(200);
  expect((await submit(long, 300, 50)).status).toBe(202);
  expect((await submit(cancelled, 5_000, 0)).status).toBe(202);
  const cancel = await fetch(`${host.url}/internal/runs/${cancelled}`, {
    method: "DELETE",
    headers: { authorization: `Bearer ${TOKEN}` },
  });
  expect(cancel.status).toBe(200);
  const statesOf = (id: string) => reported().flatMap((r) => (r.id === id ? [r.status] : []));
  await eventually(
    async () => statesOf(long),
    (states) => states.includes("running"),
  );
  await new Promise((r) => setTimeout(r, 500)); // the long run ends meanwhile: nothing else comes
  expect(statesOf(quick)).toEqual([]);
  expect(statesOf(long)).toEqual(["running"]);
  expect(statesOf(cancelled)).toEqual(["running"]);
  const running = reported().find((r) => r.id === long);
  expect(running).toMatchObject({ projectId: "p", app: "jobs", function: "nap", async: true });
});

it("never reports a queued run: one withdrawn or cancelled while queued is not reported at all", async () => {
  const client = hostClient(host.url);
  const scaling = { max_replicas: 1, replica_concurrency: 1 };
  await client.deploy(
    "p",
    "jobs",
    1,
    { "main.mjs": "export const nap = (ms) => new Promise((r) => setTimeout(r, ms));" },
    configOf("jobs", { scaling }),
  );
  const submit = (runId: string, ms: number, signal?: AbortSignal) =>
    fetch(`${host.url}/internal/async/p/jobs/nap`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, [HEADER.runId]: runId },
      body: JSON.stringify(ms),
      signal,
    });
  const stateOf = async (runId: string) => {
    const res = await fetch(`${host.url}/internal/runs/${runId}`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    return res.ok ? ((await res.json()) as HostRun).status : res.status;
  };
  const [first, withdrawn, cancelled, waited] = [1, 2, 3, 4].map(() => newId("run"));
  expect((await submit(first as string, 400)).status).toBe(202);
  const gone = new AbortController();
  const withdrawing = submit(withdrawn as string, 1, gone.signal).catch(() => undefined);
  const cancelling = submit(cancelled as string, 1);
  const waiting = submit(waited as string, 200); // answered 202 once it starts
  for (const runId of [withdrawn, cancelled, waited] as string[]) {
    await eventually(
      () => stateOf(runId),
      (state) => state === "queued",
    );
  }
  gone.abort();
  await withdrawing;
  await fetch(`${host.url}/internal/runs/${cancelled}`, {
    method: "DELETE",
    headers: { authorization: `Bearer ${TOKEN}` },
  });
  expect((await cancelling).status).toBe(200);
  expect((await waiting).status).toBe(202);
  const statesOf = (id: unknown) => reported().flatMap((r) => (r.id === id ? [r.status] : []));
  await eventually(
    async () => statesOf(waited),
    (states) => states.includes("running"),
  );
  await new Promise((r) => setTimeout(r, 300)); // the runs end meanwhile: nothing else comes
  expect(statesOf(first)).toEqual(["running"]);
  expect(statesOf(waited)).toEqual(["running"]);
  expect(statesOf(withdrawn)).toEqual([]);
  expect(statesOf(cancelled)).toEqual([]);
  expect(reported().filter((r) => r.status === "queued")).toEqual([]);
});

it("sends only the last of several reports of one run in a batch", async () => {
  const reports = new RunReports(
    `http://127.0.0.1:${(control.address() as AddressInfo).port}`,
    TOKEN,
  );
  const runId = newId("run");
  const run: HostRun = {
    runId,
    project: "p",
    app: "jobs",
    fn: "nap",
    status: "running",
    startedAt: Date.now(),
    deadlineAt: Date.now() + 60_000,
  };
  reports.running(run);
  reports.ended(runId, {
    projectId: "p",
    app: "jobs",
    function: "nap",
    status: "success",
    runTimeMs: 2,
  });
  await reports.close();
  expect(reported()).toEqual([expect.objectContaining({ id: runId, status: "success" })]);
});

it("sends a batch again while the control plane cannot take it, and gives up when told to stop", async () => {
  let refusals = 2;
  const bodies: string[] = [];
  const flaky = createServer((req, res) => {
    let text = "";
    req.on("data", (c) => {
      text += c;
    });
    req.on("end", () => {
      bodies.push(text);
      res.writeHead(refusals-- > 0 ? 503 : 200).end("{}");
    });
  });
  await new Promise<void>((resolve) => flaky.listen(0, "127.0.0.1", resolve));
  try {
    const url = `http://127.0.0.1:${(flaky.address() as AddressInfo).port}`;
    const reports = new RunReports(url, TOKEN, [10, 10, 60_000]);
    const runId = newId("run");
    reports.ended(runId, {
      projectId: "p",
      app: "a",
      function: "f",
      status: "success",
      runTimeMs: 1,
    });
    await eventually(
      async () => bodies.length,
      (n) => n === 3,
    );
    expect(bodies.every((b) => b.includes(runId))).toBe(true); // the same batch, three times

    // Stopping cuts a long pause short: one last try, then the host can go.
    refusals = 10;
    reports.ended(newId("run"), {
      projectId: "p",
      app: "a",
      function: "f",
      status: "failure",
      runTimeMs: 1,
    });
    await eventually(
      async () => bodies.length,
      (n) => n === 6, // three tries, the third pause is a minute long
    );
    const started = Date.now();
    await reports.close();
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(bodies).toHaveLength(7);
  } finally {
    await new Promise((resolve) => flaky.close(resolve));
  }
});

it("lists a sync run still on its replica after a second as running, then its end; a quick one only ended", async () => {
  const client = hostClient(host.url);
  await client.deploy("p", "naps", 1, {
    "main.mjs": "export const nap = (ms) => new Promise((r) => setTimeout(() => r(ms), ms));",
  });
  // Warm: the long call's second is to be spent on the replica, not on its start.
  expect((await client.invoke("p", "naps", "nap", "0")).status).toBe(200);
  const [quick, long] = [newId("run"), newId("run")];
  expect((await client.invoke("p", "naps", "nap", "0", { [HEADER.runId]: quick })).status).toBe(
    200,
  );
  const call = client.invoke("p", "naps", "nap", "2000", { [HEADER.runId]: long });
  const statesOf = (id: string) => reported().flatMap((r) => (r.id === id ? [r.status] : []));
  // While the call runs (it answers after 2 s), the index hears it is running.
  const running = await eventually(
    async () => reported().find((r) => r.id === long),
    (r) => r !== undefined,
  );
  expect(running).toMatchObject({ async: false, status: "running", app: "naps", function: "nap" });
  expect((await call).status).toBe(200);
  await eventually(
    async () => statesOf(long),
    (s) => s.length === 2,
  );
  expect(statesOf(long)).toEqual(["running", "success"]);
  expect(statesOf(quick)).toEqual(["success"]);
});
