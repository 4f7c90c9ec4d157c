// An operator drains a runtime host joined to a real control plane on loopback (docs/hosts.md,
// "Draining a host"): a call in flight there finishes, the host stops its replicas (idle ones at
// once, the busy one once its call ends), its min_replicas included, and its places of the app's
// max_replicas are free for the other hosts; resumed, it takes work again. Before, an operator
// could take work off a host only by stopping it.
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, expect, it } from "vitest";
import { users } from "../control-plane/db/schema.ts";
import { httpRuntimeHosts } from "../control-plane/host-client.ts";
import { liveHosts } from "../control-plane/hosts/registry.ts";
import { createHostToken } from "../control-plane/hosts/tokens.ts";
import { serveControlPlane } from "../control-plane/listen.ts";
import { INTERNAL_TOKEN, memoryBundles } from "../control-plane/testing/fixture.ts";
import { libsqlFixture } from "../control-plane/testing/libsql.ts";
import type { RunningHost } from "../runtime-host/server.ts";
import {
  bundle,
  eventually,
  hostClient,
  newHome,
  removeHome,
  startTestHost,
} from "../runtime-host/test-support.ts";

let f: Awaited<ReturnType<typeof libsqlFixture>>;
let server: Server;
let host: RunningHost;
let home: string;

beforeAll(async () => {
  f = await libsqlFixture({
    bundles: memoryBundles(),
    hosts: httpRuntimeHosts(() => liveHosts(f.db), INTERNAL_TOKEN),
  });
  await f.db.update(users).set({ operator: true }).where(eq(users.id, f.owner.id));
  server = serveControlPlane(f.app, { port: 0, hostname: "127.0.0.1" });
  await new Promise<void>((resolve) => server.once("listening", resolve));
  const { token } = await createHostToken(f.db, { name: "drained", createdBy: f.owner.id });
  home = await newHome();
  host = await startTestHost(home, {
    internalToken: undefined,
    join: {
      controlPlaneUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      hostToken: () => token,
      name: "drained",
      slots: 4,
      memoryMb: 1024,
    },
  });
});

afterAll(async () => {
  await host?.close();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await f.cleanup();
  await removeHome(home);
});

/** The host as the operator's listing has it. */
async function registry() {
  const { hosts } = (await (await f.call("GET", "/v2/hosts")).json()) as {
    hosts: Array<{ id: string; state: string; apps: Array<{ replicas: number }> }>;
  };
  return hosts.find((h) => h.id === host.hostId);
}

it("finishes its call in flight and stops its replicas, min_replicas too (their places free); resumed, takes work again", async () => {
  const main =
    "export const run = async ({ ms }) => { await new Promise((r) => setTimeout(r, ms)); return 'done'; };";
  const toml = 'name = "held"\n[scaling]\nmin_replicas = 2\nmax_replicas = 2\n';
  const files = bundle({ "runlet.toml": toml, "main.mjs": main });
  expect(
    (await f.call("POST", `/v2/projects/${f.projectId}/apps`, { body: { files } })).status,
  ).toBe(201);
  const client = hostClient(host.url, INTERNAL_TOKEN);
  const replicas = async () =>
    (await client.metrics()).find((a) => a.app === "held")?.replicas.length ?? 0;
  await eventually(replicas, (n) => n === 2, 30_000); // min_replicas, warm
  const call = client.invoke(f.projectId, "held", "run", JSON.stringify({ ms: 1_500 }));
  await eventually(
    () => client.metrics(),
    (apps) => apps.some((a) => a.app === "held" && a.replicas.some((r) => r.active > 0)),
  );

  expect((await f.call("POST", `/v2/hosts/${host.hostId}/drain`)).status).toBe(204);
  expect(await call).toMatchObject({ status: 200, body: { ok: true, result: "done" } });
  // Both stop, the busy one after its call; a heartbeat then says it runs none.
  await eventually(replicas, (n) => n === 0, 15_000);
  const drained = await eventually(
    registry,
    (h) => h?.apps.every((a) => a.replicas === 0) ?? false,
    10_000,
  );
  expect(drained?.state).toBe("drained");

  expect((await f.call("POST", `/v2/hosts/${host.hostId}/resume`)).status).toBe(204);
  expect(await client.invoke(f.projectId, "held", "run", JSON.stringify({ ms: 1 }))).toMatchObject({
    status: 200,
    body: { ok: true, result: "done" },
  });
  expect((await registry())?.state).toBe("up");
});

// A graceful stop says `draining` at once (no new work goes there while its calls finish), then
// that it left. test/hosts.test.ts checked the first until the host began to leave; nothing did
// since.
it("says it is draining as it begins a graceful stop, while a call is in flight; then that it left", async () => {
  const client = hostClient(host.url, INTERNAL_TOKEN);
  const call = client.invoke(f.projectId, "held", "run", JSON.stringify({ ms: 1_500 }));
  await eventually(
    () => client.metrics(),
    (apps) => apps.some((a) => a.app === "held" && a.replicas.some((r) => r.active > 0)),
  );
  const closing = host.close({ graceful: true });
  const stopping = await eventually(registry, (h) => h?.state !== "up", 10_000);
  expect(stopping?.state).toBe("draining");
  expect(await call).toMatchObject({ status: 200, body: { ok: true, result: "done" } });
  await closing;
  expect(await registry()).toMatchObject({ state: "stopped", apps: [] });
});
