// A runtime host reached over a link that breaks while it holds a sync call (a relay on
// loopback stands for the far link, 50 ms each way). The host had taken the call and runs it to
// its end; the caller's 502 must say the call may have run there, not that the host was not
// reachable (read as "nothing ran", the call is sent again and runs twice).
import { afterAll, beforeAll, expect, it } from "vitest";
import { loadOrCreateInternalToken } from "../control-plane/home.ts";
import { eventually, hostClient } from "../runtime-host/test-support.ts";
import { client, sleeper } from "./apps.ts";
import { freePorts, json, newHome, type Runlet, removeHome, startRunlet } from "./harness.ts";
import { type Relay, startRelay } from "./relay.ts";

let home: string;
let stack: Runlet;
let relay: Relay;

beforeAll(async () => {
  home = await newHome();
  const ports = await freePorts();
  relay = await startRelay(ports.host, 50);
  // The host registers at the relay's address: the Worker reaches it over the "far" link.
  stack = await startRunlet(home, ports, { RUNLET_HOST_ADDRESS: relay.url });
  await client(stack).deploy(
    sleeper(['name = "far"', 'runtime = "managed"', "[scaling]", "max_replicas = 1"]),
  );
});

afterAll(async () => {
  await stack?.stop();
  await relay?.close();
  await removeHome(home);
});

it("a sync call whose link breaks while the host runs it answers 502 saying it may have run", async () => {
  const warm = await client(stack).submit("far", { ms: 1 });
  expect(warm.status).toBe(200);
  expect(relay.accepted()).toBeGreaterThan(0); // placed over the link

  const host = hostClient(
    `http://127.0.0.1:${stack.ports.host}`,
    await loadOrCreateInternalToken(home),
  );
  const call = client(stack).submit("far", { ms: 4_000 });
  // The host has taken it: its one replica of the app is busy.
  await eventually(
    () => host.metrics(),
    (apps) => apps.some((a) => a.app === "far" && a.replicas.some((r) => r.active > 0)),
    30_000,
  );
  relay.cut();
  const res = await call;
  expect(res.status).toBe(502);
  const body = await json(res);
  expect(body.message).toBe(
    "the runtime host could not be reached, or the connection to it broke before it answered; the call may have run there",
  );

  // It did run there, to its end: the replica's next call has seen it.
  const next = await client(stack).submit("far", { ms: 1 });
  expect(next.status).toBe(200);
  expect(((await json(next)).result as { seen: string[] }).seen).toContain(body.run_id);
}, 60_000);
