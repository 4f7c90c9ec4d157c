// Replica grants on a full disk (docs/hosts.md, "Replicas over all hosts"): a grant cannot be
// written, yet an app's max_replicas still holds over all hosts, counted in memory with the
// heartbeats held there. Before, each request for a replica was a 507, and a host could start no
// replica: an app scaled to zero could not be run. The database is made full for real (SQLite's
// max_page_count).
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { hostApps, users } from "../db/schema.ts";
import { isDiskFull } from "../errors.ts";
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

describe("replica grants on a full disk", () => {
  it("still hold an app's max_replicas over all hosts, and the last place goes to one host", async () => {
    const made = await f.call("POST", "/v2/hosts/tokens", { body: { name: "rack" } });
    const { token } = (await made.json()) as { token: string };
    const [a, b] = [
      await register(token, "http://10.9.1.1:8790"),
      await register(token, "http://10.9.1.2:8790"),
    ];
    const ask = async (host: string, app: string, maxReplicas: number, have?: number) => {
      const res = await f.call("POST", `/internal/hosts/${host}/replicas`, {
        token,
        body: { project: f.projectId, app, version: 1, maxReplicas, have },
      });
      expect(res.status).toBe(200);
      return ((await res.json()) as { granted: boolean }).granted;
    };
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      // A third host's rows fill what room the grants' table has left in its pages.
      const c = await register(token, "http://10.9.1.3:8790");
      await fillDatabase(f.db);
      for (let size = 512, i = 0; size >= 1; size = Math.floor(size / 2)) {
        for (let full = false; !full; i++) {
          const row = { hostId: c, projectId: "filler", app: `${i}${"x".repeat(size)}` };
          full = await f.db
            .insert(hostApps)
            .values({ ...row, version: 1, replicas: 0, ready: 0, busy: 0 })
            .then(() => false, isDiskFull);
        }
      }
      // Two places over both hosts.
      expect(await ask(a, "web", 2)).toBe(true);
      expect(await ask(b, "web", 2)).toBe(true);
      expect(await ask(a, "web", 2)).toBe(false);
      expect(await ask(b, "web", 2, 0)).toBe(true); // b's replica exited: its place is free
      expect(await ask(a, "web", 2)).toBe(false);
      // One place, asked for by both at once.
      const both = await Promise.all([ask(a, "one", 1), ask(b, "one", 1)]);
      expect(both.filter(Boolean)).toHaveLength(1);

      // The Worker's placement sees the replicas granted.
      const res = await f.call("GET", "/internal/hosts", { token: INTERNAL_TOKEN });
      const { hosts } = (await res.json()) as {
        hosts: Array<{ id: string; state: string; apps: Array<{ app: string; replicas: number }> }>;
      };
      const web = hosts.map((h) => h.apps.find((x) => x.app === "web")?.replicas ?? 0);
      expect(web.reduce((x, y) => x + y, 0)).toBe(2);
      expect(hosts.filter((h) => h.id === a || h.id === b).map((h) => h.state)).toEqual([
        "up",
        "up",
      ]);
    } finally {
      logged.mockRestore();
    }
  });
});
