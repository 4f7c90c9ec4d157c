// Hosts leaving the registry (docs/hosts.md, "A host that stops, a host removed"): a host that
// stopped gracefully says so and is `stopped`, not `down` as one that crashed, and the Worker sends
// it nothing; an operator removes a host that is down or stopped (`DELETE /v2/hosts/{id}`), not one
// still heard from. Either way its places of an app's max_replicas are free at once. Before, a host
// stopped with Ctrl-C read `down` as a crashed one, held its places until 15 s of silence, and a
// decommissioned host stayed in `runlet hosts` as `down` for good.
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DOWN_AFTER_MS } from "../../common/protocol/hosts.ts";
import { hosts } from "../db/schema.ts";
import { INTERNAL_TOKEN, operatorHostToken, registerHost } from "../testing/fixture.ts";
import { libsqlFixture } from "../testing/libsql.ts";

let f: Awaited<ReturnType<typeof libsqlFixture>>;
let token: string;

beforeAll(async () => {
  f = await libsqlFixture();
  ({ token } = await operatorHostToken(f, "racks"));
});
afterAll(() => f.cleanup());

const register = (address: string) => registerHost(f, token, address);

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

describe("DELETE /v2/hosts/{id}", () => {
  it("removes a down host with what it held: it leaves the list, its places are free", async () => {
    const gone = await register("http://10.8.1.1:8790");
    const other = await register("http://10.8.1.2:8790");
    expect(await ask(gone, "removed")).toBe(true);
    await silence(gone);
    expect((await f.call("DELETE", `/v2/hosts/${gone}`)).status).toBe(204);
    expect(await listed(gone)).toBeUndefined();
    expect(await placed(gone)).toBeUndefined();
    expect(await ask(other, "removed")).toBe(true);
    // Gone: a second removal, and an id never known, are 404.
    for (const id of [gone, "hst_never"]) {
      const res = await f.call("DELETE", `/v2/hosts/${id}`);
      expect(res.status).toBe(404);
      expect(await res.json()).toMatchObject({ code: "not_found" });
    }
  });

  it("removes a stopped host at once", async () => {
    const id = await register("http://10.8.1.3:8790");
    expect((await leave(id)).status).toBe(204);
    expect((await f.call("DELETE", `/v2/hosts/${id}`)).status).toBe(204);
    expect(await listed(id)).toBeUndefined();
  });

  it("refuses a host still heard from (409, saying to stop it first), and changes nothing", async () => {
    const up = await register("http://10.8.1.4:8790");
    expect(await ask(up, "held")).toBe(true);
    const res = await f.call("DELETE", `/v2/hosts/${up}`);
    expect(res.status).toBe(409);
    const { message } = (await res.json()) as { message: string };
    expect(message).toContain(`host '${up}' is up`);
    expect(message).toContain("stop it first");
    const draining = await register("http://10.8.1.5:8790");
    await f.call("POST", `/internal/hosts/${draining}/heartbeat`, {
      token,
      body: { state: "draining", busy: 1, queued: 0, apps: [] },
    });
    const refused = await f.call("DELETE", `/v2/hosts/${draining}`);
    expect(refused.status).toBe(409);
    expect(((await refused.json()) as { message: string }).message).toContain("is draining");
    expect(await listed(up)).toMatchObject({ state: "up" });
    expect(await listed(draining)).toMatchObject({ state: "draining" });
    expect(await ask(await register("http://10.8.1.6:8790"), "held")).toBe(false); // up's still
  });

  it("a removed host that comes back registers as a new host", async () => {
    const old = await register("http://10.8.1.7:8790");
    await silence(old);
    expect((await f.call("DELETE", `/v2/hosts/${old}`)).status).toBe(204);
    expect((await beat(old)).status).toBe(404); // so it registers again
    const again = await register("http://10.8.1.7:8790");
    expect(again).not.toBe(old);
    expect(await listed(again)).toMatchObject({ state: "up" });
  });

  it("is an operator's: anyone else is 403, and nothing is removed", async () => {
    const id = await register("http://10.8.1.8:8790");
    await silence(id);
    for (const t of [f.member.token, f.outsider.token]) {
      const res = await f.call("DELETE", `/v2/hosts/${id}`, { token: t });
      expect(res.status).toBe(403);
    }
    expect((await f.call("DELETE", `/v2/hosts/${id}`, { token: null })).status).toBe(401);
    expect(await listed(id)).toMatchObject({ state: "down" });
  });
});
