// A full disk under the control plane (docs/hosts.md, "Registration and heartbeats"): the hosts
// that still beat stay up in the registry — for the Worker's placement (/internal/hosts) and for
// operators (/v2/hosts) — though their heartbeats cannot be written; each heartbeat's answer
// says the control plane is degraded, and its log says so once. The database is made full for
// real (SQLite's max_page_count); its hosts' last written heartbeats are 20 s old, past the 15 s
// after which a host is down.
import { eq, sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { DOWN_AFTER_MS } from "../../common/protocol/hosts.ts";
import { hosts, users } from "../db/schema.ts";
import { INTERNAL_TOKEN, registerHost } from "../testing/fixture.ts";
import { fillDatabase } from "../testing/full-disk.ts";
import { libsqlFixture } from "../testing/libsql.ts";

let f: Awaited<ReturnType<typeof libsqlFixture>>;
beforeAll(async () => {
  f = await libsqlFixture();
  await f.db.update(users).set({ operator: true }).where(eq(users.id, f.owner.id));
});
afterAll(() => f.cleanup());

const register = (token: string, address: string) => registerHost(f, token, address);

/** A heartbeat of a host that runs `n` apps (each of more apps needs more room to write). */
const beat = (token: string, hostId: string, n: number) =>
  f.call("POST", `/internal/hosts/${hostId}/heartbeat`, {
    token,
    body: {
      state: "up",
      busy: 1,
      queued: 0,
      apps: Array.from({ length: n }, (_, i) => ({
        project: f.projectId,
        app: `an-app-with-a-long-name-to-take-room-${i}`,
        version: 1,
        replicas: 1,
        ready: 1,
        busy: 0,
      })),
    },
  });

async function states(path: string, token?: string) {
  const res = await f.call("GET", path, token ? { token } : {});
  expect(res.status).toBe(200);
  const { hosts } = (await res.json()) as {
    hosts: Array<{ id: string; state: string; apps: unknown[] }>;
  };
  return Object.fromEntries(hosts.map((h) => [h.id, { state: h.state, apps: h.apps.length }]));
}

describe("a full disk under the control plane", () => {
  it("keeps the hosts that still beat up, says so once, and writes their heartbeats again once there is room", async () => {
    const made = await f.call("POST", "/v2/hosts/tokens", { body: { name: "rack" } });
    const { token } = (await made.json()) as { token: string };
    const beating = await register(token, "http://10.9.0.1:8790");
    const silent = await register(token, "http://10.9.0.2:8790");
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      const makeRoom = await fillDatabase(f.db);
      // Their last heartbeats written were 20 s ago (the row is updated in place: it fits).
      await f.db.run(sql`UPDATE hosts SET seen_at = ${Date.now() - DOWN_AFTER_MS - 5_000}`);

      for (const n of [40, 80, 120]) {
        const res = await beat(token, beating, n);
        expect(res.status).toBe(200);
        expect(((await res.json()) as { degraded?: string }).degraded).toMatch(
          /^the control plane's disk is full: this heartbeat is kept in its memory, not written/,
        );
      }
      const expected = {
        [beating]: { state: "up", apps: 120 },
        [silent]: { state: "down", apps: 0 },
      };
      expect(await states("/internal/hosts", INTERNAL_TOKEN)).toEqual(expected);
      expect(await states("/v2/hosts")).toEqual(expected);
      const said = (re: RegExp) => logged.mock.calls.filter((c) => re.test(String(c[0]))).length;
      expect(said(/the disk is full .*host heartbeats and replica grants are kept in memory/)).toBe(
        1,
      );

      await makeRoom();
      const res = await beat(token, beating, 120);
      expect(res.status).toBe(200);
      expect(await res.json()).not.toHaveProperty("degraded");
      const [row] = await f.db.select().from(hosts).where(eq(hosts.id, beating));
      expect(Date.now() - (row?.seenAt ?? 0)).toBeLessThan(DOWN_AFTER_MS); // written
      expect(await states("/v2/hosts")).toEqual(expected);
      expect(said(/host heartbeats are written to the database again/)).toBe(1);
    } finally {
      logged.mockRestore();
    }
  });
});
