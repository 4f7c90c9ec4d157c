// The registry of runtime hosts (docs/hosts.md) through its routes: host tokens an operator
// makes (shown once), a host's registration and heartbeats, the replicas of an app granted over
// all hosts within its max_replicas, a host down after 15 s of silence, a revoked token.
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DOWN_AFTER_MS } from "../../common/protocol/hosts.ts";
import { hosts, users } from "../db/schema.ts";
import { FORGET_DOWN_MS } from "../hosts/registry.ts";
import { INTERNAL_TOKEN } from "../testing/fixture.ts";
import { libsqlFixture } from "../testing/libsql.ts";

let f: Awaited<ReturnType<typeof libsqlFixture>>;

beforeAll(async () => {
  f = await libsqlFixture();
  await f.db.update(users).set({ operator: true }).where(eq(users.id, f.owner.id));
});
afterAll(() => f.cleanup());

/** Each token its own name: a live token's name is taken. */
let made = 0;

async function hostToken(name = `rack ${++made}`): Promise<string> {
  const res = await f.call("POST", "/v2/hosts/tokens", { body: { name } });
  expect(res.status).toBe(201);
  return ((await res.json()) as { token: string }).token;
}

async function register(token: string, address: string, slots = 8) {
  const res = await f.call("POST", "/internal/hosts", {
    token,
    body: { name: address, address, slots, memoryMb: 4096 },
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const beat = (token: string, hostId: string, body: Record<string, unknown>) =>
  f.call("POST", `/internal/hosts/${hostId}/heartbeat`, {
    token,
    body: { state: "up", busy: 0, queued: 0, apps: [], ...body },
  });

const ask = async (
  token: string,
  hostId: string,
  app: string,
  maxReplicas: number,
  have?: number,
) => {
  const res = await f.call("POST", `/internal/hosts/${hostId}/replicas`, {
    token,
    body: { project: f.projectId, app, version: 1, maxReplicas, have },
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { granted: boolean }).granted;
};

async function placement() {
  const res = await f.call("GET", "/internal/hosts", { token: INTERNAL_TOKEN });
  expect(res.status).toBe(200);
  return ((await res.json()) as { hosts: Array<Record<string, unknown>> }).hosts;
}

describe("host tokens", () => {
  it("are an operator's: a project's owner who is not one is refused, as is a missing token", async () => {
    for (const token of [f.member.token, f.outsider.token]) {
      const res = await f.call("GET", "/v2/hosts", { token });
      expect(res.status).toBe(403);
      expect(await res.json()).toMatchObject({ code: "forbidden" });
    }
    expect((await f.call("POST", "/v2/hosts/tokens", { token: null, body: {} })).status).toBe(401);
  });

  it("refuse the name 'local', runlet start's own (a second one was told apart by its id alone)", async () => {
    for (const name of ["local", " local "]) {
      const res = await f.call("POST", "/v2/hosts/tokens", { body: { name } });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { message: string }).message).toContain(
        "'local' is the name of the token runlet start makes for its own hosts: choose another",
      );
    }
    expect((await f.call("POST", "/v2/hosts/tokens", { body: { name: "local-2" } })).status).toBe(
      201,
    );
  });

  it("refuse a second live token of a name with 409 naming the first; revoking it frees the name", async () => {
    // Two of one name were made: the list and the dashboard told them apart by id alone.
    await hostToken("rack-east");
    const listed = async () =>
      (
        (await (await f.call("GET", "/v2/hosts/tokens")).json()) as {
          tokens: Array<Record<string, unknown>>;
        }
      ).tokens.filter((t) => t.name === "rack-east");
    const [first] = await listed();
    const twice = await Promise.all(
      [1, 2].map(() => f.call("POST", "/v2/hosts/tokens", { body: { name: "rack-east" } })),
    );
    for (const res of twice) {
      expect(res.status).toBe(409);
      expect(await res.json()).toEqual({
        code: "conflict",
        message: `a host token named 'rack-east' is live already (${first?.id}): revoke it first (runlet hosts revoke ${first?.id}, or the dashboard's Join tokens tab, under Hosts), or pick another name`,
      });
    }
    expect(await listed()).toHaveLength(1);
    expect((await f.call("DELETE", `/v2/hosts/tokens/${first?.id}`)).status).toBe(204);
    // Two at once of a free name: one is made.
    const both = await Promise.all(
      [1, 2].map(() => f.call("POST", "/v2/hosts/tokens", { body: { name: "rack-east" } })),
    );
    expect(both.map((r) => r.status).sort()).toEqual([201, 409]);
    expect((await listed()).map((t) => t.revokedAt === null)).toEqual([false, true]);
  });

  it("are shown once: the list never carries the token, and a host joins with it", async () => {
    const token = await hostToken("shown once");
    expect(token).toMatch(/^rlh_[A-Za-z0-9_-]{43}$/);
    const listed = await (await f.call("GET", "/v2/hosts/tokens")).text();
    expect(listed).toContain("shown once");
    expect(listed).not.toContain(token);
    const { status, body } = await register(token, "http://10.9.0.1:8790");
    expect(status).toBe(200);
    expect(body).toMatchObject({ internalToken: INTERNAL_TOKEN, heartbeatMs: 2000 });
    expect(body.hostId).toMatch(/^hst_/);
  });

  it("refuse a host without a valid token (401) and a registration that is not one (400)", async () => {
    for (const token of [null, "rlh_not-a-token", INTERNAL_TOKEN]) {
      expect((await register(token as string, "http://10.9.0.2:8790")).status).toBe(401);
    }
    // Each says which mistake it is: it said "a runtime host needs a valid host token" alone.
    const why = async (token: string | null) =>
      (
        (await (await f.call("POST", "/internal/hosts", { token, body: {} })).json()) as {
          message: string;
        }
      ).message;
    const make = "an operator makes one with 'runlet hosts token --name NAME'";
    expect(await why(null)).toBe(
      `a runtime host needs a valid host token: none was given (RUNLET_HOST_TOKEN); ${make}`,
    );
    expect(await why(INTERNAL_TOKEN)).toBe(
      `a runtime host needs a valid host token: this is not one (host tokens begin rlh_); ${make}`,
    );
    expect(await why("rlh_not-a-token")).toBe(
      `a runtime host needs a valid host token: this one is not known to this control plane (mistyped, or another Runlet's); ${make}`,
    );
    const token = await hostToken();
    const bad = await f.call("POST", "/internal/hosts", {
      token,
      body: { name: "x", address: "ftp://10.9.0.2", slots: 0, memoryMb: 1 },
    });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ code: "bad_request" });
  });

  it("once revoked, end its hosts' heartbeats (401) and registrations", async () => {
    const token = await hostToken("to revoke");
    const { body } = await register(token, "http://10.9.0.3:8790");
    const { tokens } = (await (await f.call("GET", "/v2/hosts/tokens")).json()) as {
      tokens: Array<{ id: string; name: string; hosts: unknown[] }>;
    };
    const made = tokens.find((t) => t.name === "to revoke");
    const id = made?.id;
    // Which hosts its revoke stops: the list of tokens says, and each host its token.
    expect(made?.hosts).toEqual([{ id: body.hostId, name: expect.any(String), state: "up" }]);
    const { hosts } = (await (await f.call("GET", "/v2/hosts")).json()) as {
      hosts: Array<{ id: string; tokenId: string }>;
    };
    expect(hosts.find((h) => h.id === body.hostId)?.tokenId).toBe(id);
    expect((await f.call("DELETE", `/v2/hosts/tokens/${id}`)).status).toBe(204);
    expect((await f.call("DELETE", `/v2/hosts/tokens/${id}`)).status).toBe(404);
    // Stopped at once, where no new work goes: not up until 15 s of silence made it down.
    expect((await placement()).find((h) => h.id === body.hostId)?.state).toBe("down");
    const after = (await (await f.call("GET", "/v2/hosts")).json()) as {
      hosts: Array<{ id: string; state: string }>;
    };
    expect(after.hosts.find((h) => h.id === body.hostId)?.state).toBe("stopped");
    const refused = await beat(token, body.hostId as string, {});
    expect(refused.status).toBe(401);
    expect(await refused.json()).toMatchObject({
      message: `a runtime host needs a valid host token: this one, 'to revoke' (${id}), was revoked; an operator makes one with 'runlet hosts token --name NAME'`,
    });
    expect((await register(token, "http://10.9.0.3:8790")).status).toBe(401);
  });
});

describe("hosts", () => {
  it("keep their id when they register again at the same address; heartbeats show their load", async () => {
    const token = await hostToken();
    const first = await register(token, "http://10.9.1.1:8790", 4);
    const again = await register(token, "http://10.9.1.1:8790", 6);
    expect(again.body.hostId).toBe(first.body.hostId);
    const hostId = first.body.hostId as string;
    const app = { project: f.projectId, app: "svc", version: 2, replicas: 2, ready: 2, busy: 1 };
    const res = await beat(token, hostId, { busy: 1, queued: 3, apps: [app] });
    expect(res.status).toBe(200);
    const shown = (await placement()).find((h) => h.id === hostId);
    expect(shown).toMatchObject({ state: "up", slots: 6, busy: 1, queued: 3 });
    expect(shown?.apps).toEqual([
      { project: f.projectId, app: "svc", replicas: 2, ready: 2, busy: 1 },
    ]);
    // The operator's listing says the same, with its times.
    const { hosts: listed } = (await (await f.call("GET", "/v2/hosts")).json()) as {
      hosts: Array<Record<string, unknown>>;
    };
    expect(listed.find((h) => h.id === hostId)).toMatchObject({
      state: "up",
      name: "http://10.9.1.1:8790",
    });
  });

  it("refuse an address a live host of another token has (409); once it is down, it is taken over", async () => {
    // A second machine's `runlet host` without --address registered at 127.0.0.1:8790 and took
    // over runlet start's own host's entry: its id, name and token swapped at every heartbeat.
    const [mine, theirs] = [await hostToken("rack a"), await hostToken("rack b")];
    const first = await register(mine, "http://10.9.1.9:8790");
    const second = await register(theirs, "http://10.9.1.9:8790");
    expect(second.status).toBe(409);
    expect(second.body.message).toBe(
      `http://10.9.1.9:8790 is the address of runtime host 'http://10.9.1.9:8790' (${first.body.hostId}), up, heard from 0 s ago under another join token. If it is another machine, give this host the address the Worker reaches it at (runlet host --address http://<its address>:<port>). If it is this host before a restart, its entry is down in 15 s unless it is heard from again, and runlet host tries again until then and takes it over`,
    );
    expect((await register(mine, "http://10.9.1.9:8790")).body.hostId).toBe(first.body.hostId);
    await f.db
      .update(hosts)
      .set({ seenAt: Date.now() - DOWN_AFTER_MS - 1_000 })
      .where(eq(hosts.id, first.body.hostId as string));
    expect((await register(theirs, "http://10.9.1.9:8790")).status).toBe(200);
  });

  it("are draining when they say so, and down after 15 s without a heartbeat", async () => {
    const token = await hostToken();
    const { body } = await register(token, "http://10.9.1.2:8790");
    const hostId = body.hostId as string;
    await beat(token, hostId, { state: "draining" });
    expect((await placement()).find((h) => h.id === hostId)?.state).toBe("draining");
    await f.db
      .update(hosts)
      .set({ seenAt: Date.now() - DOWN_AFTER_MS - 1_000 })
      .where(eq(hosts.id, hostId));
    expect((await placement()).find((h) => h.id === hostId)?.state).toBe("down");
  });

  it("are forgotten 10 min after their last heartbeat, once another host registers", async () => {
    const token = await hostToken();
    const { body } = await register(token, "http://10.9.1.4:8790");
    const gone = body.hostId as string;
    await f.db
      .update(hosts)
      .set({ seenAt: Date.now() - FORGET_DOWN_MS - 1_000 })
      .where(eq(hosts.id, gone));
    expect((await placement()).find((h) => h.id === gone)?.state).toBe("down");
    await register(token, "http://10.9.1.5:8790");
    expect((await placement()).find((h) => h.id === gone)).toBeUndefined();
  });

  it("are told which of the apps they run were deleted", async () => {
    const token = await hostToken();
    const { body } = await register(token, "http://10.9.1.3:8790");
    const gone = {
      project: f.projectId,
      app: "never-deployed",
      version: 1,
      replicas: 1,
      ready: 1,
      busy: 0,
    };
    const res = await beat(token, body.hostId as string, { apps: [gone] });
    expect(await res.json()).toEqual({
      gone: [{ project: f.projectId, app: "never-deployed" }],
      current: [],
      secrets: [{ project: f.projectId, revision: expect.any(Number) }],
    });
  });

  it("a heartbeat for another token's host, or an unknown one, is 404 (the host registers again)", async () => {
    const mine = await hostToken();
    const theirs = await hostToken();
    const { body } = await register(theirs, "http://10.9.1.4:8790");
    expect((await beat(mine, body.hostId as string, {})).status).toBe(404);
    expect((await beat(mine, "hst_unknown", {})).status).toBe(404);
  });
});

describe("replicas of an app over all hosts", () => {
  it("are granted up to max_replicas in all, freed by a heartbeat, and a down host's do not count", async () => {
    const token = await hostToken();
    const a = (await register(token, "http://10.9.2.1:8790")).body.hostId as string;
    const b = (await register(token, "http://10.9.2.2:8790")).body.hostId as string;
    expect(await ask(token, a, "wide", 3)).toBe(true);
    expect(await ask(token, a, "wide", 3)).toBe(true);
    expect(await ask(token, b, "wide", 3)).toBe(true);
    expect(await ask(token, b, "wide", 3)).toBe(false); // 3 in all already
    // a says it runs only one now: one is free again.
    const one = { project: f.projectId, app: "wide", version: 1, replicas: 1, ready: 1, busy: 0 };
    await beat(token, a, { apps: [one] });
    expect(await ask(token, b, "wide", 3)).toBe(true);
    expect(await ask(token, b, "wide", 3)).toBe(false);
    // a goes silent: its replica no longer counts.
    await f.db
      .update(hosts)
      .set({ seenAt: Date.now() - DOWN_AFTER_MS - 1_000 })
      .where(eq(hosts.id, a));
    expect(await ask(token, b, "wide", 3)).toBe(true);
  });

  it("count a host's replicas as the host says when it asks, not as its last heartbeat did", async () => {
    const token = await hostToken();
    const a = (await register(token, "http://10.9.4.1:8790")).body.hostId as string;
    const b = (await register(token, "http://10.9.4.2:8790")).body.hostId as string;
    expect(await ask(token, a, "solo", 1, 0)).toBe(true);
    expect(await ask(token, a, "solo", 1, 1)).toBe(false); // it runs the one it has
    // Its replica exited (or a redeploy retired it) before a heartbeat said so.
    expect(await ask(token, a, "solo", 1, 0)).toBe(true);
    // Another host's word is about itself only.
    expect(await ask(token, b, "solo", 1, 0)).toBe(false);
  });

  it("a host back from down keeps only what max_replicas leaves it beside the hosts up before it", async () => {
    const token = await hostToken();
    const files = [
      ["runlet.toml", 'name = "thawed"\n[scaling]\nmax_replicas = 3\nmin_replicas = 1\n'],
      ["main.mjs", "export const run = () => 1;"],
    ].map(([path, text]) => ({
      path,
      contentBase64: Buffer.from(text as string).toString("base64"),
    }));
    expect(
      (await f.call("POST", `/v2/projects/${f.projectId}/apps`, { body: { files } })).status,
    ).toBe(201);
    const first = (await register(token, "http://10.9.5.1:8790")).body.hostId as string;
    await new Promise((r) => setTimeout(r, 5)); // up since a later moment
    const second = (await register(token, "http://10.9.5.2:8790")).body.hostId as string;
    const runs = (replicas: number) => ({
      apps: [
        { project: f.projectId, app: "thawed", version: 1, replicas, ready: replicas, busy: 0 },
      ],
    });
    const keep = async (hostId: string, replicas: number) => {
      const res = await beat(token, hostId, runs(replicas));
      expect(res.status).toBe(200);
      const answer = (await res.json()) as { current: Array<{ app: string; keep?: number }> };
      return answer.current.find((c) => c.app === "thawed")?.keep;
    };
    // 2 + 1 of 3: each may keep what it has (the first all three, the second what is left).
    expect(await keep(first, 2)).toBe(3);
    expect(await keep(second, 1)).toBe(1);
    // The first goes silent (frozen): its two stop counting, and the second is granted them.
    await f.db
      .update(hosts)
      .set({ seenAt: Date.now() - DOWN_AFTER_MS - 1_000 })
      .where(eq(hosts.id, first));
    expect(await ask(token, second, "thawed", 3, 1)).toBe(true);
    expect(await ask(token, second, "thawed", 3, 2)).toBe(true);
    expect(await keep(second, 3)).toBe(3);
    // Back with its two: five run. It is up since its return, after the second: it keeps none,
    // and is told so again at each heartbeat until it has retired them.
    expect(await keep(first, 2)).toBe(0);
    expect(await keep(second, 3)).toBe(3);
    expect(await keep(first, 2)).toBe(0);
    expect(await ask(token, second, "thawed", 3, 3)).toBe(false);
    // Retired; once the second runs fewer, the first may be granted replicas again.
    expect((await beat(token, first, {})).status).toBe(200);
    expect(await keep(second, 1)).toBe(3);
    expect(await ask(token, first, "thawed", 3, 0)).toBe(true);
    expect(await keep(first, 1)).toBe(2);
  });

  it("asked for all at once, are granted exactly max_replicas times", async () => {
    const token = await hostToken();
    const ids = await Promise.all(
      [1, 2, 3].map(
        async (i) => (await register(token, `http://10.9.3.${i}:8790`)).body.hostId as string,
      ),
    );
    const answers = await Promise.all(
      Array.from({ length: 30 }, (_, i) => ask(token, ids[i % 3] as string, "burst", 7)),
    );
    expect(answers.filter(Boolean)).toHaveLength(7);
  });
});

describe("a project's secrets for its replicas", () => {
  it("are given decrypted to a runtime host's token only, as the replicas' environment", async () => {
    const put = await f.call("PUT", `/v2/projects/${f.projectId}/secrets/DB_URL`, {
      body: { value: "postgres://u:p@db/x" },
    });
    expect(put.status).toBe(204);
    const token = await hostToken("secrets reader");
    const res = await f.call("GET", `/internal/secrets/${f.projectId}`, { token });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { env: Record<string, string> }).env).toMatchObject({
      DB_URL: "postgres://u:p@db/x",
    });
    // Not a person's token, not the internal one: a host's.
    expect((await f.call("GET", `/internal/secrets/${f.projectId}`)).status).toBe(401);
    const other = await f.call("GET", `/internal/secrets/${f.projectId}`, {
      token: INTERNAL_TOKEN,
    });
    expect(other.status).toBe(401);
  });

  it("come with the project's revision, raised by each change (and only by a change), which heartbeats tell", async () => {
    const token = await hostToken("secrets revisions");
    const hostId = (await register(token, "http://10.9.6.1:8790")).body.hostId as string;
    const runs = { project: f.projectId, app: "envy", version: 1, replicas: 1, ready: 1, busy: 0 };
    const heard = async () => {
      const answer = (await (await beat(token, hostId, { apps: [runs] })).json()) as {
        secrets: Array<{ project: string; revision: number }>;
      };
      const read = await f.call("GET", `/internal/secrets/${f.projectId}`, { token });
      const { revision } = (await read.json()) as { revision: number };
      expect(answer.secrets).toEqual([{ project: f.projectId, revision }]);
      return revision;
    };
    const path = `/v2/projects/${f.projectId}/secrets/ROTATED`;
    const before = await heard();
    expect((await f.call("PUT", path, { body: { value: "one" } })).status).toBe(204);
    expect(await heard()).toBe(before + 1);
    expect((await f.call("PUT", path, { body: { value: "two" } })).status).toBe(204);
    expect(await heard()).toBe(before + 2);
    // Refused (over the project's 1 MiB): nothing changed, no replica to replace.
    let status = 0;
    let refused = before + 2;
    for (let i = 0; i < 20 && status !== 409; i++) {
      refused = await heard();
      const res = await f.call("PUT", `${path}_${i}`, { body: { value: "x".repeat(60 * 1024) } });
      status = res.status;
    }
    expect(status).toBe(409);
    expect(await heard()).toBe(refused);
    expect((await f.call("DELETE", path)).status).toBe(204);
    expect(await heard()).toBe(refused + 1);
    expect((await f.call("DELETE", path)).status).toBe(404);
    expect(await heard()).toBe(refused + 1);
  });
});
