// A host's heartbeats through a link to the control plane that stalls for a while, shorter than
// the registry's "down" threshold (DOWN_AFTER_MS, 15 s), losing what is sent meanwhile. A fake
// control plane on loopback holds every heartbeat that arrives during the stall unanswered (the
// host's 5 s timeout must end it) and notes when each other one is heard, as the registry's
// `seenAt` does. The garbage collector runs meanwhile, as it does in a host at work.
//
// Before, the timeout did not fire once the collector had run (timeout-signal.ts): the lost
// heartbeat waited forever, and every later one behind it. And a failed heartbeat was tried again
// only a whole tick (2 s) after its timeout: tries at 2, 9 and 16 s after the last one heard, so
// a stall of 10 s (ending after the try at 9 s was lost) left the host silent 16 s, shown `down`
// for a second though the control plane was back after 10.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { afterEach, expect, it } from "vitest";
import { DOWN_AFTER_MS, HEARTBEAT_MS } from "../common/protocol/hosts.ts";
import { heartbeatPause, Membership, POST_TIMEOUT_MS } from "./membership.ts";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

let server: Server | undefined;
let membership: Membership | undefined;
const held = new Set<ServerResponse>();

afterEach(async () => {
  membership?.stop();
  for (const res of held) res.destroy();
  held.clear();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
});

/** Answers registration and heartbeats; after the first heartbeat heard, stalls `stallMs`. */
async function stallingControlPlane(stallMs: number, heard: number[]): Promise<string> {
  let stalledUntil = 0;
  const listening = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    req.on("end", () => {
      const json = (body: unknown) => {
        res.setHeader("content-type", "application/json");
        res.end(JSON.stringify(body));
      };
      if (req.url === "/internal/hosts")
        return json({ hostId: "hst_1", internalToken: "t".repeat(32), heartbeatMs: HEARTBEAT_MS });
      if (!req.url?.endsWith("/heartbeat")) {
        res.statusCode = 404;
        return res.end("{}");
      }
      const now = Date.now();
      if (now < stalledUntil) {
        held.add(res); // lost on the way: never heard, never answered
        return;
      }
      heard.push(now);
      if (heard.length === 1) stalledUntil = now + stallMs;
      json({ gone: [], current: [] });
    });
  });
  server = listening;
  await new Promise<void>((resolve) => listening.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(listening.address() as AddressInfo).port}`;
}

/** The times the control plane heard the first heartbeat and the next one after its stall. */
async function heardAcross(stallMs: number): Promise<[number, number]> {
  const heard: number[] = [];
  membership = new Membership({
    controlPlaneUrl: await stallingControlPlane(stallMs, heard),
    hostToken: () => "rlh_test",
    heartbeat: () => ({ state: "up", busy: 0, queued: 0, apps: [] }),
    answered: () => {},
  });
  await membership.join({ name: "h1", address: "http://127.0.0.1:1", slots: 4, memoryMb: 1024 });
  // Bounded far past any pace the host keeps: a heartbeat that never comes fails here.
  const deadline = Date.now() + 40_000;
  while (heard.length < 2 && Date.now() < deadline) {
    gc();
    await new Promise((r) => setTimeout(r, 250));
  }
  expect(heard.length, "no heartbeat heard after the stall").toBeGreaterThanOrEqual(2);
  const [first, second] = heard as [number, number];
  expect(second - first).toBeGreaterThan(stallMs); // the stall did hold the heartbeats back
  return [first, second];
}

it("gives up a heartbeat lost to a stalled link and is heard again once the link is back", async () => {
  await heardAcross(4_000);
});

it("tries again soon enough after heartbeats lost to a 10 s stall that the registry never sees the host down", () => {
  // The host's schedule, as arithmetic (no clock): heard at 0, then a try a tick later; a try
  // during the stall is lost and fails at its timeout, and the next comes heartbeatPause later.
  const stallMs = 10_000;
  let at = HEARTBEAT_MS;
  for (let failures = 1; at < stallMs; failures++)
    at += POST_TIMEOUT_MS + heartbeatPause(HEARTBEAT_MS, failures);
  // Before, a whole tick after each timeout: tries at 2, 9 and 16 s, the host down from 15 s.
  expect(at).toBe(12_750);
  expect(at).toBeLessThan(DOWN_AFTER_MS);
});
