// Hosts leaving the registry (docs/hosts.md, "A host that stops"): a host that
// stopped gracefully says so and is `stopped`, not `down` as one that crashed, the Worker sends it
// nothing, and its places of an app's max_replicas are free at once. Before, a host stopped with
// Ctrl-C read `down` as a crashed one, and held its places until 15 s of silence.
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DOWN_AFTER_MS } from "../../common/protocol/hosts.ts";
import { hosts, users } from "../db/schema.ts";
import { INTERNAL_TOKEN } from "../testing/fixture.ts";
import { libsqlFixture } from "../testing/libsql.ts";

let f: Awaited<ReturnType<typeof libsqlFixture>>;
let token: string;

beforeAll(async () => {
  f = await libsqlFixture();
  await f.db.update(users).set({ operator: true }).where(eq(users.id, f.owner.id));
  const res = await f.call("POST", "/v2/hosts/tokens", { body: { name: "racks" } });
  token = ((await res.json()) as { token: string }).token;
});
afterAll(() => f.cleanup());

async function register(address: string): Promise<string> {
  const res = await f.call("POST", "/internal/hosts", {
    token,
    body: { name: address, address, slots: 8, memoryMb: 4096 },
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { hostId: string }).hostId;
}

const beat = (hostId: string, replicas = 0) =>
  f.call("POST", `/internal/hosts/${hostId}/heartbeat`, {
    token,
    body: {
      state: "up",
      busy: 0,
      queued: 0,
      apps: replicas
        ? [{ project: f.projectId, app: "one", version: 1, replicas, ready: replicas, busy: 0 }]
        : [],
    },
  });

const leave = (hostId: string) =>
  f.call("POST", `/internal/hosts/${hostId}/leave`, { token, body: {} });

/** May the host start a replica of `app`, whose max_replicas is 1? */
const ask = async (hostId: string, app: string) => {
  const res = await f.call("POST", `/internal/hosts/${hostId}/replicas`, {
    token,
    body: { project: f.projectId, app, version: 1, maxReplicas: 1 },
  });
  return res.status === 200 && ((await res.json()) as { granted: boolean }).granted;
};

async function listed(hostId: string) {
  const res = await f.call("GET", "/v2/hosts");
  expect(res.status).toBe(200);
  const { hosts: all } = (await res.json()) as { hosts: Array<Record<string, unknown>> };
  return all.find((h) => h.id === hostId);
}

async function placed(hostId: string) {
  const res = await f.call("GET", "/internal/hosts", { token: INTERNAL_TOKEN });
  const { hosts: all } = (await res.json()) as { hosts: Array<Record<string, unknown>> };
  return all.find((h) => h.id === hostId);
}

const silence = (hostId: string) =>
  f.db
    .update(hosts)
    .set({ seenAt: Date.now() - DOWN_AFTER_MS - 1_000 })
    .where(eq(hosts.id, hostId));

describe("a host that stops gracefully", () => {
  it("is stopped, not down, however long it is silent; the Worker places nothing there", async () => {
    const id = await register("http://10.8.0.1:8790");
    expect((await beat(id, 1)).status).toBe(200);
    expect((await leave(id)).status).toBe(204);
    expect(await listed(id)).toMatchObject({ state: "stopped", busy: 0, queued: 0, apps: [] });
    // To the Worker, as down: no work, and a run it held is lost (a Worker older than
    // `stopped` reads the list all the same).
    expect(await placed(id)).toMatchObject({ state: "down", apps: [] });
    await silence(id);
    expect((await listed(id))?.state).toBe("stopped");
  });

  it("frees its places of max_replicas at once, not after 15 s of silence", async () => {
    const a = await register("http://10.8.0.2:8790");
    const b = await register("http://10.8.0.3:8790");
    expect(await ask(a, "freed")).toBe(true);
    expect(await ask(b, "freed")).toBe(false); // held by a
    expect((await leave(a)).status).toBe(204);
    expect(await ask(b, "freed")).toBe(true);
  });

  it("is refused a late heartbeat (404: a host that runs registers again), and comes back up under its id", async () => {
    const id = await register("http://10.8.0.4:8790");
    expect((await leave(id)).status).toBe(204);
    expect((await leave(id)).status).toBe(204); // said again: the same
    expect((await beat(id, 1)).status).toBe(404);
    expect(await ask(id, "late")).toBe(false);
    expect((await listed(id))?.state).toBe("stopped");
    expect(await register("http://10.8.0.4:8790")).toBe(id);
    expect((await listed(id))?.state).toBe("up");
  });

  it("needs its own host token: another host's, a person's or none is refused", async () => {
    const id = await register("http://10.8.0.5:8790");
    const other = await f.call("POST", "/v2/hosts/tokens", { body: { name: "other" } });
    const otherToken = ((await other.json()) as { token: string }).token;
    for (const [t, status] of [
      [otherToken, 404],
      [f.owner.token, 401],
      [null, 401],
    ] as const) {
      const res = await f.call("POST", `/internal/hosts/${id}/leave`, { token: t, body: {} });
      expect(res.status).toBe(status);
      expect(await res.json()).toHaveProperty("message");
    }
    expect((await listed(id))?.state).toBe("up");
  });
});
