// A host told to stop gracefully (SIGTERM in runtime-host/main.ts): new work is refused with
// 503, queued async runs are withdrawn (503: the Worker keeps them queued), sync calls and async
// runs in flight get the grace, and async runs still running after it end `failure` ("the
// runtime host stopped"), reported to their callbacks.

import { afterEach, beforeEach, expect, it } from "vitest";
import { HEADER } from "../common/consts.ts";
import type { HostRun } from "../common/protocol/host.ts";
import { HOST_STOPPED } from "./async-runs.ts";
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
export async function sleep(input) {
  await new Promise((resolve) => setTimeout(resolve, input.ms));
  return { slept: input.ms };
}
`,
};
const GRACE_MS = 1_500;

let home: string;
let host: RunningHost;
let receiver: Awaited<ReturnType<typeof startReceiver<HostRun>>>;
let received: Received<HostRun>[];

beforeEach(async () => {
  home = await newHome();
  host = await startTestHost(home, { limits: { shutdownGraceMs: GRACE_MS } });
  receiver = await startReceiver<HostRun>();
  received = receiver.received;
});

afterEach(async () => {
  await host.close();
  await receiver.close();
  await removeHome(home);
});

async function deploy(app: string, maxReplicas: number) {
  const config = configOf(app, { scaling: { max_replicas: maxReplicas } });
  expect((await hostClient(host.url).deploy("p", app, 1, APP, config)).status).toBe(200);
}

const submit = (app: string, ms: number, runId: string) =>
  fetch(`${host.url}/internal/async/p/${app}/sleep`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${TOKEN}`,
      [HEADER.runId]: runId,
      [HEADER.callbackUrl]: `${receiver.url}/runs/${runId}`,
    },
    body: JSON.stringify({ ms }),
  });

const stateOf = async (runId: string) => {
  const res = await fetch(`${host.url}/internal/runs/${runId}`, {
    headers: { authorization: `Bearer ${TOKEN}` },
  });
  return res.ok ? ((await res.json()) as HostRun).status : res.status;
};

it("lets work in flight end within the grace, refuses new work, withdraws queued runs, fails the rest", async () => {
  await deploy("quick", 2);
  await deploy("slow", 1);
  const client = hostClient(host.url);
  // Warm: the calls below start at once.
  expect((await client.invoke("p", "quick", "sleep", '{"ms":1}')).status).toBe(200);

  const sync = client.invoke("p", "quick", "sleep", '{"ms":600}');
  expect((await submit("quick", 400, "run_short")).status).toBe(202);
  expect((await submit("slow", 30_000, "run_long")).status).toBe(202);
  // Waits for run_long's slot (slow has one replica): withdrawn when the host stops.
  const queued = submit("slow", 10, "run_queued");
  await eventually(
    () => stateOf("run_queued"),
    (status) => status === "queued",
  );
  // A sync call waiting for that slot too: turned away at once, as not started here.
  const waiting = client.invoke("p", "slow", "sleep", '{"ms":1}');
  await new Promise((r) => setTimeout(r, 200));

  const started = Date.now();
  const closed = host.close({ graceful: true });
  const refused = await client.invoke("p", "quick", "sleep", '{"ms":1}');
  expect(refused.status).toBe(503);
  expect(refused.body.message).toMatch(/stopping/);
  const health = await fetch(`${host.url}/healthz`);
  expect(health.status).toBe(503);
  const withdrawn = await queued;
  expect(withdrawn.status).toBe(503);
  expect(((await withdrawn.json()) as { message: string }).message).toMatch(/shutting down/);
  const turnedAway = await waiting;
  expect(Date.now() - started).toBeLessThan(GRACE_MS); // not held for the grace
  expect(turnedAway).toMatchObject({
    status: 503,
    body: {
      message: "the runtime host is stopping: the call had not started there",
      elsewhere: true,
    },
  });

  // The sync call in flight is answered as usual.
  expect(await sync).toMatchObject({ status: 200, body: { ok: true, result: { slept: 600 } } });
  await closed;
  const took = Date.now() - started;
  expect(took).toBeGreaterThanOrEqual(GRACE_MS - 50);
  expect(took).toBeLessThan(GRACE_MS + 8_000);

  // The short run ended within the grace; the long one failed, and both ends were reported.
  const byId = new Map(received.map((r) => [r.body.runId, r.body]));
  expect(byId.get("run_short")).toMatchObject({ status: "success", result: { slept: 400 } });
  expect(byId.get("run_long")).toMatchObject({
    status: "failure",
    error: { message: HOST_STOPPED },
  });
  expect(byId.get("run_long")?.runTimeMs).toBeGreaterThanOrEqual(GRACE_MS - 100);
  expect(byId.has("run_queued")).toBe(false);
  expect(received).toHaveLength(2);
});

it("ends the grace at once when told to stop again (a second signal, its supervisor gone)", async () => {
  await deploy("slow", 1);
  expect((await submit("slow", 30_000, "run_long")).status).toBe(202);
  const started = Date.now();
  const graceful = host.close({ graceful: true });
  // In its grace: new work is refused, the run still runs.
  expect((await fetch(`${host.url}/healthz`)).status).toBe(503);
  expect(await stateOf("run_long")).toBe("running");
  void host.close(); // a second signal, or its supervisor gone: no more grace
  await eventually(
    async () => received.length,
    (n) => n === 1,
  );
  // Reported before the grace would have ended (its replica is stopped after).
  expect(Date.now() - started).toBeLessThan(GRACE_MS);
  await graceful;
  expect(received[0]?.body).toMatchObject({
    runId: "run_long",
    status: "failure",
    error: { message: HOST_STOPPED },
  });
});

it("tells a sync call its replica was stopped under it that it ran, and how long", async () => {
  await deploy("slow", 1);
  const client = hostClient(host.url);
  expect((await client.invoke("p", "slow", "sleep", '{"ms":1}')).status).toBe(200); // warm
  const sync = client.invoke("p", "slow", "sleep", '{"ms":30000}');
  await new Promise((r) => setTimeout(r, 300)); // it runs
  await host.close(); // no grace: its supervisor went
  // It said "the runtime host is shutting down", as if nothing had run (the operator's round).
  expect(await sync).toMatchObject({
    status: 503,
    body: {
      message:
        "the runtime host stopped while the call ran there, and its process with it: the call may not have finished",
      run_time_ms: expect.any(Number),
    },
  });
  expect((await sync).body.run_time_ms).toBeGreaterThanOrEqual(200);
});

it("stops at once when nothing is in flight", async () => {
  await deploy("quick", 1);
  const started = Date.now();
  await host.close({ graceful: true });
  expect(Date.now() - started).toBeLessThan(GRACE_MS);
});
