// A heartbeat and a grant request of one host never overlap at the control plane: a heartbeat
// composed before a grant and written after it lowered the registry's count of the app's
// replicas below what it had granted, so another host could be granted the same place (seen:
// 7 replicas of a `max_replicas = 6` app over three hosts). A fake control plane on loopback
// records when each request arrives and when its answer leaves.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, expect, it, vi } from "vitest";
import { Membership } from "./membership.ts";

const GRANT_MS = 300;
const events: string[] = [];
/** Its heartbeats are refused (401), as once its host token is revoked. */
let revoked = false;
let server: Server | undefined;
let membership: Membership | undefined;

afterEach(async () => {
  membership?.stop();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  events.length = 0;
  revoked = false;
});

/**
 * A control plane whose grant requests take GRANT_MS to answer (`granting`: with what) and whose
 * heartbeats are quick.
 */
async function controlPlane(granting = { status: 200, body: {} as unknown }): Promise<string> {
  const listening = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      const answer = (kind: string, body: unknown, ms = 0, status = 200) =>
        setTimeout(() => {
          events.push(`${kind} answered`);
          res.statusCode = status;
          res.setHeader("content-type", "application/json");
          res.end(JSON.stringify(body));
        }, ms);
      if (req.url?.endsWith("/register") || req.url === "/internal/hosts") {
        answer("register", { hostId: "hst_1", internalToken: "t".repeat(32), heartbeatMs: 60_000 });
      } else if (req.url?.endsWith("/heartbeat")) {
        events.push("heartbeat arrived");
        if (revoked) answer("heartbeat", { message: "a runtime host needs …" }, 0, 401);
        else answer("heartbeat", { gone: [], current: [] });
      } else if (req.url?.endsWith("/leave")) {
        answer("leave", { message: "no host 'hst_1' registered with this token" }, 0, 404);
      } else if (req.url?.endsWith("/replicas")) {
        events.push("grant arrived");
        answer("grant", granting.body, GRANT_MS, granting.status);
      } else {
        res.statusCode = 404;
        res.end("{}");
      }
    });
  });
  server = listening;
  await new Promise<void>((resolve) => listening.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(listening.address() as AddressInfo).port}`;
}

const grant = { project: "prj_1", app: "burst", version: 1, maxReplicas: 6, have: 0 };
const GRANTED: unknown = { granted: true, replicas: 1 };

async function joined(granting = { status: 200, body: GRANTED }): Promise<Membership> {
  membership = new Membership({
    controlPlaneUrl: await controlPlane(granting),
    hostToken: () => "rlh_test",
    heartbeat: () => ({ state: "up", busy: 0, queued: 0, apps: [] }),
    answered: () => {},
  });
  await membership.join({
    name: "h1",
    address: "http://127.0.0.1:1",
    slots: 4,
    memoryMb: 1024,
  });
  events.length = 0;
  return membership;
}

it("sends a heartbeat only once the grant request under way is answered", async () => {
  const m = await joined();
  const granted = m.mayStart(grant);
  await new Promise((r) => setTimeout(r, 50)); // the grant request is at the control plane
  await m.beatNow();
  expect(await granted).toMatchObject({ granted: true });
  expect(events).toEqual([
    "grant arrived",
    "grant answered",
    "heartbeat arrived",
    "heartbeat answered",
  ]);
});

it("asks for a grant only once the heartbeat under way is answered", async () => {
  const m = await joined();
  const beat = m.beatNow();
  const granted = m.mayStart(grant);
  await Promise.all([beat, granted]);
  expect(events).toEqual([
    "heartbeat arrived",
    "heartbeat answered",
    "grant arrived",
    "grant answered",
  ]);
});

it("says what the control plane answered when it was not a grant", async () => {
  const failing = await joined({ status: 503, body: { message: "overloaded" } });
  expect(await failing.mayStart(grant)).toMatchObject({
    granted: false,
    unasked: "it answered 503",
  });
  failing.stop();
  await new Promise<void>((resolve) => server?.close(() => resolve()));
  // A 200 whose body is not a grant's: not "it answered 200", which reads as an answer.
  const odd = await joined({ status: 200, body: { granted: "yes" } });
  expect(await odd.mayStart(grant)).toMatchObject({
    granted: false,
    unasked: "its answer (200) was not a grant's",
  });
});

it("says in its log when the control plane refused its leaving, rather than nothing", async () => {
  const m = await joined();
  const logged = vi.spyOn(console, "error").mockImplementation(() => {});
  try {
    await m.leave();
    expect(logged.mock.calls.map((c) => String(c[0]))).toEqual([
      "runtime host: could not tell the control plane it left: it answered 404: no host 'hst_1' registered with this token",
    ]);
  } finally {
    logged.mockRestore();
  }
});

it("does not try to leave once its token was refused: its log ends with the reason it stopped", async () => {
  // It said "could not tell the control plane it left: it answered 401" after each revoke.
  const m = await joined();
  revoked = true;
  await m.beatNow();
  const logged = vi.spyOn(console, "error").mockImplementation(() => {});
  try {
    await m.leave();
    expect(logged).not.toHaveBeenCalled();
    expect(events.filter((e) => e.startsWith("leave"))).toEqual([]);
  } finally {
    logged.mockRestore();
  }
});
