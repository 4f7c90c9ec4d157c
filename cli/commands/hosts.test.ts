import { mkdtemp, rm } from "node:fs/promises";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DOWN_AFTER_MS } from "../../common/protocol/hosts.ts";
import { hosts, users } from "../../control-plane/db/schema.ts";
import { leaveHost } from "../../control-plane/hosts/leaving.ts";
import { registerHost } from "../../control-plane/hosts/registry.ts";
import { createHostToken, hostTokenId } from "../../control-plane/hosts/tokens.ts";
import { serveControlPlane } from "../../control-plane/listen.ts";
import { libsqlFixture } from "../../control-plane/testing/libsql.ts";
import { type Host, hostRow } from "./hosts.ts";
import { runlet } from "./test-support.ts";

const host: Host = {
  id: "hst_1",
  name: "rack-2",
  address: "http://10.0.0.2:8790",
  state: "up",
  slots: 8,
  busy: 3,
  queued: 1,
  seenAt: "2026-11-26T10:00:00.000Z",
  apps: [{ project: "prj_1", app: "hello", replicas: 2 }],
};

it("shows an up host's load and apps as its heartbeat says", () => {
  const now = Date.parse("2026-11-26T10:00:01.000Z");
  expect(hostRow(host, now)).toEqual([
    "hst_1",
    "rack-2",
    "http://10.0.0.2:8790",
    "up",
    "3/8",
    "1",
    "hello×2",
  ]);
});

it("shows a down host's silence and its last apps as the past, not as running now", () => {
  const now = Date.parse("2026-11-26T10:03:00.000Z");
  expect(hostRow({ ...host, state: "down" }, now)).toEqual([
    "hst_1",
    "rack-2",
    "http://10.0.0.2:8790",
    "down, silent 3 min",
    "—",
    "—",
    "last: hello×2",
  ]);
  // One whose last heartbeat named no app: nothing, not "last: —".
  expect(hostRow({ ...host, state: "down", apps: [] }, now)[6]).toBe("—");
});

it("names a host's busiest apps and counts the rest: 150 apps warm made one line of 1,900 characters", () => {
  const apps = Array.from({ length: 150 }, (_, i) => ({
    project: "prj_1",
    app: `app-${String(149 - i).padStart(3, "0")}`,
    replicas: i === 120 ? 3 : 1,
  }));
  const [, , , , , , shown] = hostRow({ ...host, apps });
  expect(shown).toBe("app-029×3 app-000×1 app-001×1 app-002×1 app-003×1 app-004×1 +144 more");
});

it("shows a stopped host as stopped, since when, running nothing: it is not one that crashed", () => {
  const now = Date.parse("2026-11-26T10:03:00.000Z");
  expect(hostRow({ ...host, state: "stopped", apps: [] }, now)).toEqual([
    "hst_1",
    "rack-2",
    "http://10.0.0.2:8790",
    "stopped 3 min ago",
    "—",
    "—",
    "—",
  ]);
});

describe("runlet hosts drain, resume and remove", () => {
  let f: Awaited<ReturnType<typeof libsqlFixture>>;
  let server: Server;
  let env: Record<string, string>;
  let home: string;

  beforeAll(async () => {
    f = await libsqlFixture();
    await f.db.update(users).set({ operator: true }).where(eq(users.id, f.owner.id));
    server = serveControlPlane(f.app, { port: 0, hostname: "127.0.0.1" });
    await new Promise<void>((resolve) => server.once("listening", resolve));
    home = await mkdtemp(join(tmpdir(), "runlet-hosts-"));
    env = {
      RUNLET_HOME: home,
      RUNLET_BASE_URL: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      RUNLET_API_URL: "http://127.0.0.1:9",
      RUNLET_TOKEN: f.owner.token,
    };
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await f.cleanup();
    await rm(home, { recursive: true, force: true });
  });

  const joined = async (address: string) => {
    const { token } = await createHostToken(f.db, { name: address, createdBy: f.owner.id });
    const tokenId = (await hostTokenId(f.db, token)) as string;
    return registerHost(f.db, tokenId, { name: address, address, slots: 2, memoryMb: 512 });
  };

  it("takes a down host out of the list (--json says so); an unknown id is an error", async () => {
    const id = await joined("http://10.7.0.1:8790");
    await f.db
      .update(hosts)
      .set({ seenAt: Date.now() - DOWN_AFTER_MS - 1_000 })
      .where(eq(hosts.id, id));
    const removed = await runlet(["hosts", "remove", id, "--json"], env);
    expect(removed.code, removed.stderr).toBe(0);
    expect(JSON.parse(removed.stdout)).toEqual({ id, removed: true });
    const listed = await runlet(["hosts", "--json"], env);
    expect(JSON.parse(listed.stdout).hosts.map((h: { id: string }) => h.id)).not.toContain(id);
    const again = await runlet(["hosts", "remove", id], env);
    expect(again.code).not.toBe(0);
    expect(again.stderr).toContain(`no host '${id}'`);
  });

  it("names the ids of the hosts of a name given for an id (drain, resume, remove)", async () => {
    // A new operator's `runlet hosts drain local-1` said only "no host 'local-1' in the registry".
    const id = await joined("http://10.7.0.4:8790");
    for (const verb of ["drain", "resume", "remove"]) {
      const res = await runlet(["hosts", verb, "http://10.7.0.4:8790"], env);
      expect(res.code).toBe(1);
      expect(res.stderr).toContain(
        `(404): no host 'http://10.7.0.4:8790' in the registry: 'http://10.7.0.4:8790' is the name of host ${id} (up); give a host's id (the ID column of runlet hosts)`,
      );
    }
    const unknown = await runlet(["hosts", "drain", "rack-none"], env);
    expect(unknown.stderr.trim()).toBe(
      "runlet hosts: draining the host failed (404): no host 'rack-none' in the registry",
    );
  });

  it("refuses a host that is up, saying to stop it first, and keeps it", async () => {
    const id = await joined("http://10.7.0.2:8790");
    const refused = await runlet(["hosts", "remove", id], env);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain("stop it first");
    const listed = await runlet(["hosts"], env);
    expect(listed.stdout).toMatch(new RegExp(`${id}.*\\bup\\b`));
  });

  it("drains a host and resumes it (the list says drained, then up); a stopped one is refused", async () => {
    const id = await joined("http://10.7.0.3:8790");
    const drained = await runlet(["hosts", "drain", id, "--json"], env);
    expect(drained.code, drained.stderr).toBe(0);
    expect(JSON.parse(drained.stdout)).toEqual({ id, drained: true });
    expect((await runlet(["hosts"], env)).stdout).toMatch(new RegExp(`${id}.*\\bdrained\\b`));
    const resumed = await runlet(["hosts", "resume", id], env);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout).toContain(`Resumed ${id}`);
    expect((await runlet(["hosts"], env)).stdout).toMatch(new RegExp(`${id}.*\\bup\\b`));
    await leaveHost(f.db, id);
    const refused = await runlet(["hosts", "drain", id], env);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain(`host '${id}' is stopped`);
  });

  it("prints a new host token alone on stdout, and on stderr the command a new machine joins with", async () => {
    const made = await runlet(["hosts", "token", "--name", "rack-9"], env);
    expect(made.code, made.stderr).toBe(0);
    expect(made.stdout).toMatch(/^rlh_\S+$/);
    expect(made.stderr).toContain(
      `On the new machine: RUNLET_HOST_TOKEN=<token> npx runlet host --control-plane ${env.RUNLET_BASE_URL} --address http://<its address>:8790`,
    );
    expect(made.stderr).not.toContain(made.stdout);
  });

  it("revokes a host token, naming the hosts it stops (--json too); one no host joined with says so", async () => {
    const { id, token } = await createHostToken(f.db, { name: "rack-r", createdBy: f.owner.id });
    const hostId = await registerHost(f.db, id, {
      name: "rack-r1",
      address: "http://10.7.0.9:8790",
      slots: 2,
      memoryMb: 512,
    });
    const revoked = await runlet(["hosts", "revoke", id], env);
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(revoked.stdout).toBe(
      `Revoked ${id}: its hosts rack-r1 (up) are refused at their next heartbeat, and stop.`,
    );
    expect(await hostTokenId(f.db, token)).toBeUndefined();

    const lone = await createHostToken(f.db, { name: "unused", createdBy: f.owner.id });
    const json = await runlet(["hosts", "revoke", lone.id, "--json"], env);
    expect(JSON.parse(json.stdout)).toEqual({ id: lone.id, revoked: true, hosts: [] });
    const other = await createHostToken(f.db, { name: "unused-2", createdBy: f.owner.id });
    expect((await runlet(["hosts", "revoke", other.id], env)).stdout).toBe(
      `Revoked ${other.id}: no host is registered with it now; none can join with it.`,
    );
    expect(hostId).toMatch(/^hst_/);
  });

  it("says how in --help, and asks for the id", async () => {
    const help = await runlet(["hosts", "--help"], env);
    expect(help.stdout + help.stderr).toContain("runlet hosts drain|resume|remove <host-id>");
    const bare = await runlet(["hosts", "remove"], env);
    expect(bare.code).not.toBe(0);
    expect(bare.stderr).toContain("give the id of the host to remove");
  });
});

it("points `hosts tokens create --name N` (as `tokens create` goes) to `hosts token --name N`", async () => {
  // It said only "hosts tokens takes no --name", and a new operator did not find the command.
  for (const args of [
    ["hosts", "tokens", "create", "--name", "rack"],
    ["hosts", "tokens", "--name", "rack"],
  ]) {
    const made = await runlet(args, { RUNLET_HOME: "/nonexistent" });
    expect(made.code).toBe(1);
    expect(made.stderr).toBe(
      "runlet hosts: hosts tokens lists the join tokens; to make one: runlet hosts token --name N",
    );
  }
});
