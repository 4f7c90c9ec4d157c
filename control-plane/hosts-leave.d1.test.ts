// The registry's leaving, removal and drain on D1 (docs/hosts.md): the same code as on libSQL,
// whose batches read what their statements return (a removal's deleted row, a heartbeat's state),
// which D1 hands back in its own shape. control-plane/routes/hosts-leave.test.ts and
// hosts-drain.test.ts cover the behaviour on libSQL.
import { env } from "cloudflare:test";
import { eq } from "drizzle-orm";
import { drizzle } from "drizzle-orm/d1";
import { beforeAll, expect, it } from "vitest";
import { DOWN_AFTER_MS } from "../common/protocol/hosts.ts";
import type { Database } from "./db/index.ts";
import * as schema from "./db/schema.ts";
import { createFixture, type Fixture, INTERNAL_TOKEN, registerHost } from "./testing/fixture.ts";
import { strictD1 } from "./testing/strict-d1.ts";

let db: Database;
let f: Fixture;
let token: string;

beforeAll(async () => {
  db = drizzle(strictD1(env.DB), { schema }) as unknown as Database;
  f = await createFixture(db);
  await db.update(schema.users).set({ operator: true }).where(eq(schema.users.id, f.owner.id));
  const made = await f.call("POST", "/v2/hosts/tokens", { body: { name: "d1 racks" } });
  token = ((await made.json()) as { token: string }).token;
  const files = [
    { path: "runlet.toml", contentBase64: btoa('name = "one"\n[scaling]\nmax_replicas = 1\n') },
    { path: "main.mjs", contentBase64: btoa("export const run = () => 1;\n") },
  ];
  expect(
    (await f.call("POST", `/v2/projects/${f.projectId}/apps`, { body: { files } })).status,
  ).toBe(201);
});

const register = (address: string) => registerHost(f, token, address);

const ask = async (hostId: string) => {
  const res = await f.call("POST", `/internal/hosts/${hostId}/replicas`, {
    token,
    body: { project: f.projectId, app: "one", version: 1, maxReplicas: 1 },
  });
  return ((await res.json()) as { granted: boolean }).granted;
};

async function state(hostId: string) {
  const { hosts } = (await (await f.call("GET", "/v2/hosts")).json()) as {
    hosts: Array<{ id: string; state: string }>;
  };
  return hosts.find((h) => h.id === hostId)?.state;
}

it("a host that leaves is stopped, and its place is free", async () => {
  const a = await register("http://d1-a.test:8790");
  const b = await register("http://d1-b.test:8790");
  expect(await ask(a)).toBe(true);
  expect(await ask(b)).toBe(false);
  expect((await f.call("POST", `/internal/hosts/${a}/leave`, { token })).status).toBe(204);
  expect(await state(a)).toBe("stopped");
  expect(await ask(b)).toBe(true);
  // b gives it back for the next test.
  await f.call("POST", `/internal/hosts/${b}/heartbeat`, {
    token,
    body: { state: "up", busy: 0, queued: 0, apps: [] },
  });
});

it("removes a down host (204, then 404) and refuses an up one (409)", async () => {
  const down = await register("http://d1-c.test:8790");
  const up = await register("http://d1-d.test:8790");
  await db
    .update(schema.hosts)
    .set({ seenAt: Date.now() - DOWN_AFTER_MS - 1_000 })
    .where(eq(schema.hosts.id, down));
  expect((await f.call("DELETE", `/v2/hosts/${down}`)).status).toBe(204);
  expect((await f.call("DELETE", `/v2/hosts/${down}`)).status).toBe(404);
  expect((await f.call("DELETE", `/v2/hosts/${up}`)).status).toBe(409);
  expect(await state(up)).toBe("up");
});

it("a drained host stays drained through its heartbeats and a new registration, told to keep none", async () => {
  const id = await register("http://d1-e.test:8790");
  expect((await f.call("POST", `/v2/hosts/${id}/drain`)).status).toBe(204);
  const res = await f.call("POST", `/internal/hosts/${id}/heartbeat`, {
    token,
    body: {
      state: "up",
      busy: 0,
      queued: 0,
      apps: [{ project: f.projectId, app: "one", version: 1, replicas: 1, ready: 1, busy: 0 }],
    },
  });
  const { current } = (await res.json()) as { current: Array<{ keep?: number }> };
  expect(current[0]?.keep).toBe(0);
  expect(await state(id)).toBe("drained");
  const placed = (await (
    await f.call("GET", "/internal/hosts", { token: INTERNAL_TOKEN })
  ).json()) as { hosts: Array<{ id: string; state: string }> };
  expect(placed.hosts.find((h) => h.id === id)?.state).toBe("draining");
  // Registering again (a crash and a restart) does not undo it.
  expect(await register("http://d1-e.test:8790")).toBe(id);
  expect(await state(id)).toBe("drained");
  expect((await f.call("POST", `/v2/hosts/${id}/resume`)).status).toBe(204);
  expect(await state(id)).toBe("up");
});
