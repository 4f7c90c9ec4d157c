import { and, eq } from "drizzle-orm";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { auditLog, secrets } from "../db/schema.ts";
import { auditRows } from "../testing/audit-rows.ts";
import { noRuntimeHosts } from "../testing/fixture.ts";
import { libsqlFixture } from "../testing/libsql.ts";

let f: Awaited<ReturnType<typeof libsqlFixture>>;
const VALUE = "postgres://app:s3cr3t-Zq9w@db.internal/app";
/** What the runtime hosts were told of changes, in order. */
const told: Array<{ project: string; revision: number }> = [];

beforeAll(async () => {
  f = await libsqlFixture({
    hosts: { ...noRuntimeHosts, secretsChanged: async (change) => void told.push(change) },
  });
});

afterAll(() => f?.cleanup());

afterEach(() => vi.restoreAllMocks());

type Body = Record<string, unknown> & { message?: string };
const body = async (res: Response) => (await res.json()) as Body;
const path = (name: string) => `/v2/projects/${f.projectId}/secrets/${name}`;

describe("secrets", () => {
  it("stores a value encrypted and gives it back to the owner, auditing both", async () => {
    const put = await f.call("PUT", path("DATABASE_URL"), { body: { value: VALUE } });
    expect(put.status).toBe(204);
    const [row] = await f.db
      .select()
      .from(secrets)
      .where(and(eq(secrets.projectId, f.projectId), eq(secrets.name, "DATABASE_URL")));
    expect(row?.sealed).toBeDefined();
    expect(row?.sealed).not.toContain("s3cr3t");
    expect(Buffer.from(String(row?.sealed), "base64url").toString("latin1")).not.toContain(
      "s3cr3t",
    );

    const got = await f.call("GET", path("DATABASE_URL"));
    expect(got.status).toBe(200);
    expect(await body(got)).toEqual({ name: "DATABASE_URL", value: VALUE });

    const [read, write] = await auditRows(f.db, f.projectId);
    expect(write).toMatchObject({
      action: "secrets.write",
      outcome: "success",
      targetType: "secret",
      targetId: "DATABASE_URL",
      metadata: { created: true },
    });
    expect(read).toMatchObject({ action: "secrets.read", outcome: "success", actorId: f.owner.id });
  });

  it("deletes a secret for its owner, on the record; then it is gone, and a second delete is 404", async () => {
    await f.call("PUT", path("LEAKED"), { body: { value: "old-key" } });
    expect((await f.call("DELETE", path("LEAKED"))).status).toBe(204);
    expect((await f.call("GET", path("LEAKED"))).status).toBe(404);
    const [, deleted] = await auditRows(f.db, f.projectId); // newest first: the refused read
    expect(deleted).toMatchObject({
      action: "secrets.delete",
      outcome: "success",
      targetType: "secret",
      targetId: "LEAKED",
    });
    const again = await f.call("DELETE", path("LEAKED"));
    expect(again.status).toBe(404);
    expect((await auditRows(f.db, f.projectId))[0]).toMatchObject({
      action: "secrets.delete",
      outcome: "failure",
    });
    const member = await f.call("DELETE", path("OTHER"), { token: f.member.token });
    expect(member.status).toBe(403);
  });

  it("replaces a value and says it was not a creation", async () => {
    await f.call("PUT", path("TOKEN"), { body: { value: "one" } });
    await f.call("PUT", path("TOKEN"), { body: { value: "two" } });
    expect(await body(await f.call("GET", path("TOKEN")))).toMatchObject({ value: "two" });
    const entries = await auditRows(f.db, f.projectId);
    expect(entries[1]).toMatchObject({ action: "secrets.write", metadata: { created: false } });
  });

  it("refuses a name the runtime host sets in every replica, which no app would see; PORT is taken", async () => {
    for (const name of ["PATH", "NODE_ENV", "RUNLET_APP"]) {
      const res = await f.call("PUT", path(name), { body: { value: "x" } });
      expect(res.status).toBe(400);
      expect((await body(res)).message).toBe(
        `${name} is the runtime host's own variable in every replica: a secret of that name would never reach an app (the host's value wins). Choose another name`,
      );
      expect((await f.call("GET", path(name))).status).toBe(404); // nothing stored
    }
    // A managed app sees a secret PORT (a custom app's own PORT wins there).
    expect((await f.call("PUT", path("PORT"), { body: { value: "1" } })).status).toBe(204);
    expect((await f.call("PUT", path("RUNLET_OTHER"), { body: { value: "1" } })).status).toBe(204);
  });

  it("keeps a sealed value bound to its project and name", async () => {
    await f.call("PUT", path("A"), { body: { value: "alpha" } });
    const [a] = await f.db.select().from(secrets).where(eq(secrets.name, "A"));
    await f.db.insert(secrets).values({ ...(a as typeof secrets.$inferSelect), name: "B" });
    const copied = await f.call("GET", path("B"));
    expect(copied.status).toBe(500);
    expect(JSON.stringify(await body(copied))).not.toContain("alpha");
  });

  it("refuses members (recorded as failures), outsiders and anonymous callers", async () => {
    await f.call("PUT", path("GUARDED"), { body: { value: VALUE } });
    const asMember = await f.call("GET", path("GUARDED"), { token: f.member.token });
    expect(asMember.status).toBe(403);
    const [entry] = await auditRows(f.db, f.projectId);
    expect(entry).toMatchObject({
      action: "secrets.read",
      outcome: "failure",
      actorId: f.member.id,
      targetId: "GUARDED",
      metadata: { status: 403 },
    });
    expect(
      (await f.call("PUT", path("GUARDED"), { token: f.member.token, body: { value: "x" } }))
        .status,
    ).toBe(403);
    expect((await f.call("GET", path("GUARDED"), { token: f.outsider.token })).status).toBe(403);
    expect((await f.call("GET", path("GUARDED"), { token: null })).status).toBe(401);
  });

  it("answers 404 for a secret that does not exist, on the record", async () => {
    const res = await f.call("GET", path("MISSING"));
    expect(res.status).toBe(404);
    const [entry] = await auditRows(f.db, f.projectId);
    expect(entry).toMatchObject({
      action: "secrets.read",
      outcome: "failure",
      metadata: { status: 404 },
    });
  });

  it.each([
    ["a name starting with a digit", "1ABC", { value: "v" }, /^name: /],
    ["a name with a dash", "MY-KEY", { value: "v" }, /^name: /],
    ["a name over 128 characters", "A".repeat(129), { value: "v" }, /^name: /],
    ["no value", "OK", {}, /^value: /],
    ["a value that is not a string", "OK", { value: 42 }, /^value: /],
    [
      "a value over 64 KiB",
      "OK",
      { value: "é".repeat(33 * 1024) },
      /^value: must be at most 64 KiB/,
    ],
    ["an unknown field", "OK", { value: "v", note: "x" }, /unknown field 'note'/],
    // Both were stored: the first read back as "a\ufffdb", the second reached the app as "a".
    ["a value with a lone surrogate", "ODD", { value: "a\ud800b" }, /^value: holds half of/],
    ["a value with a NUL", "ODD", { value: "a\u0000b" }, /^value: must not contain NUL/],
  ])("refuses %s with 400, writing nothing", async (_, name, payload, message) => {
    const res = await f.call("PUT", path(name), { body: payload });
    expect(res.status).toBe(400);
    expect((await body(res)).message).toMatch(message);
    expect((await f.call("GET", path(name))).status).not.toBe(200);
  });

  it("keeps a value of any other Unicode, emoji, newlines and JSON-like text included, as sent", async () => {
    const value = 'Zoë 👩‍💻 \u202e\n"}{<b>&amp;</b>\t\ud83c\udf89';
    expect((await f.call("PUT", path("UNICODE"), { body: { value } })).status).toBe(204);
    expect(await body(await f.call("GET", path("UNICODE")))).toEqual({ name: "UNICODE", value });
  });

  it("never lets a value reach an audit entry, an error or a log line", async () => {
    const logged: unknown[] = [];
    for (const method of ["log", "error", "warn", "info"] as const) {
      vi.spyOn(console, method).mockImplementation((...args) => logged.push(...args));
    }
    const secret = "never-print-me-4f1c";
    await f.call("PUT", path("PRIVATE"), { body: { value: secret } });
    await f.call("GET", path("PRIVATE"));
    // A refused write whose body holds the value, and a malformed one.
    const refused = await f.call("PUT", path("PRIVATE"), {
      token: f.member.token,
      body: { value: secret },
    });
    const bad = await f.call("PUT", path("PRIVATE"), { body: { value: secret, extra: secret } });
    const answers = JSON.stringify([await body(refused), await body(bad)]);
    expect(answers).not.toContain(secret);
    const everything = JSON.stringify(await f.db.select().from(auditLog));
    expect(everything).not.toContain(secret);
    expect(JSON.stringify(logged)).not.toContain(secret);
  });
});

describe("GET /v2/projects/{id}/secrets", () => {
  type Listed = {
    secrets: {
      name: string;
      createdAt: string;
      updatedAt: string;
      updatedBy: string;
      updatedByName: string;
    }[];
  };

  it("shows the owner every name by name, with its times and writer, and never a value", async () => {
    const projectId = await f.addProject();
    const at = (name: string) => `/v2/projects/${projectId}/secrets/${name}`;
    const values = { ZETA: "zeta-value-81a2", ALPHA: VALUE, MIDDLE: "middle-value-7c3d" };
    for (const [name, value] of Object.entries(values)) {
      expect((await f.call("PUT", at(name), { body: { value } })).status).toBe(204);
    }
    const before = Date.now();
    await new Promise((r) => setTimeout(r, 5));
    expect((await f.call("PUT", at("ZETA"), { body: { value: "zeta-2" } })).status).toBe(204);
    const entries = (await auditRows(f.db, projectId)).length;

    const res = await f.call("GET", `/v2/projects/${projectId}/secrets`);
    expect(res.status).toBe(200);
    const text = await res.text();
    for (const value of [...Object.values(values), "zeta-2"]) expect(text).not.toContain(value);
    const listed = JSON.parse(text) as Listed;
    expect(listed.secrets.map((s) => s.name)).toEqual(["ALPHA", "MIDDLE", "ZETA"]);
    for (const secret of listed.secrets) {
      expect(Object.keys(secret).sort()).toEqual([
        "createdAt",
        "name",
        "updatedAt",
        "updatedBy",
        "updatedByName",
      ]);
      expect(secret.updatedBy).toBe(f.owner.id);
      expect(secret.updatedByName).toBe(f.owner.name);
      expect(new Date(secret.createdAt).toISOString()).toBe(secret.createdAt);
    }
    const zeta = listed.secrets[2];
    expect(Date.parse(zeta?.updatedAt ?? "")).toBeGreaterThanOrEqual(before);
    expect(Date.parse(zeta?.createdAt ?? "")).toBeLessThan(before);
    // Listing names is not a read of a value: nothing new in the audit log.
    expect(await auditRows(f.db, projectId)).toHaveLength(entries);
  });

  it("names a service account that wrote one, revoked since or not", async () => {
    const projectId = await f.addProject();
    const made = await f.call("POST", `/v2/projects/${projectId}/service-accounts`, {
      body: {
        name: "deploy-bot",
        role: "owner",
        expiresAt: new Date(Date.now() + 864e5).toISOString(),
      },
    });
    expect(made.status).toBe(201);
    const sa = (await made.json()) as { id: string; token: string };
    const put = await f.call("PUT", `/v2/projects/${projectId}/secrets/BOT_KEY`, {
      token: sa.token,
      body: { value: "bot-value" },
    });
    expect(put.status).toBe(204);
    const list = async () =>
      ((await (await f.call("GET", `/v2/projects/${projectId}/secrets`)).json()) as Listed).secrets;
    expect(await list()).toMatchObject([
      { name: "BOT_KEY", updatedBy: sa.id, updatedByName: "deploy-bot" },
    ]);
    const revoked = await f.call("DELETE", `/v2/projects/${projectId}/service-accounts/${sa.id}`);
    expect(revoked.status).toBe(204);
    expect(await list()).toMatchObject([{ updatedBy: sa.id, updatedByName: "deploy-bot" }]);
  });

  it("gives an empty list for a project without secrets", async () => {
    const projectId = await f.addProject();
    const res = await f.call("GET", `/v2/projects/${projectId}/secrets`);
    expect(await body(res)).toEqual({ secrets: [], hasMore: false });
  });

  it("refuses members, outsiders and anonymous callers", async () => {
    await f.call("PUT", path("LISTED"), { body: { value: VALUE } });
    const list = (token: string | null) =>
      f.call("GET", `/v2/projects/${f.projectId}/secrets`, { token });
    const member = await list(f.member.token);
    expect(member.status).toBe(403);
    expect(await body(member)).toEqual({
      message: `only the project owner may do this: your role in it is member (an owner may make you one: runlet users role ${f.member.id} owner)`,
      code: "forbidden",
    });
    expect((await list(f.outsider.token)).status).toBe(403);
    expect((await list(null)).status).toBe(401);
  });

  it("tells a member's service account its role and how a token that may is made", async () => {
    // A CI job's token of the default role (member) was told "only the project owner may do
    // this", with no word of its role or of --role owner.
    const made = await f.call("POST", `/v2/projects/${f.projectId}/service-accounts`, {
      body: { name: "ci-secrets", expiresAt: new Date(Date.now() + 86_400_000).toISOString() },
    });
    const { token } = (await made.json()) as { token: string };
    const refused = await f.call("PUT", path("FROM_CI"), { token, body: { value: "x" } });
    expect(refused.status).toBe(403);
    expect(await body(refused)).toEqual({
      message:
        "only the project owner may do this: this service account's role is member (a token that may is made with --role owner: runlet tokens create)",
      code: "forbidden",
    });
  });
});

describe("a change of secrets", () => {
  it("tells the runtime hosts each change's revision before it answers, and nothing of a refused one", async () => {
    told.length = 0;
    expect((await f.call("PUT", path("ROTATE_ME"), { body: { value: "a" } })).status).toBe(204);
    const [first] = told;
    expect(first).toEqual({ project: f.projectId, revision: expect.any(Number) });
    const at = (first as { revision: number }).revision;
    expect((await f.call("PUT", path("ROTATE_ME"), { body: { value: "b" } })).status).toBe(204);
    expect((await f.call("PUT", path("HOME"), { body: { value: "x" } })).status).toBe(400);
    expect((await f.call("DELETE", path("ROTATE_ME"))).status).toBe(204);
    expect((await f.call("DELETE", path("ROTATE_ME"))).status).toBe(404);
    expect(told.map((t) => t.revision)).toEqual([at, at + 1, at + 2]);
  });

  it("tells the hosts nothing when a secret is set to the value it has: no replica is replaced", async () => {
    // A script that set every secret on each run, unchanged, replaced every replica each time.
    told.length = 0;
    expect((await f.call("PUT", path("STEADY"), { body: { value: "same" } })).status).toBe(204);
    expect((await f.call("PUT", path("STEADY"), { body: { value: "same" } })).status).toBe(204);
    expect((await f.call("PUT", path("STEADY"), { body: { value: "other" } })).status).toBe(204);
    const [made, changed] = told.map((t) => t.revision);
    expect(told).toHaveLength(2);
    expect(changed).toBe((made as number) + 1);
    // Stored and audited all the same: the write happened.
    const writes = await f.call(
      "GET",
      `/v2/projects/${f.projectId}/audit-log?action=secrets.write`,
    );
    const logs = ((await writes.json()) as { logs: Array<{ target: { id: string } }> }).logs;
    expect(logs.filter((l) => l.target.id === "STEADY")).toHaveLength(3);
  });
});
