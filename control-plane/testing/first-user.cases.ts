/**
 * The first user of a control plane that has none (`POST /v2/init`, with the bootstrap token)
 * and the users its operator adds (`POST /v2/projects/{id}/users`), on libSQL and on D1. One
 * database, empty at first, for the whole sequence: the claim can be made only once.
 */
import { count } from "drizzle-orm";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { type ControlPlaneApp, createControlPlane } from "../app.ts";
import type { Deps } from "../context.ts";
import type { Database } from "../db/index.ts";
import { auditLog, memberships, projects, tokens, users } from "../db/schema.ts";
import { fixtureDeps, INTERNAL_TOKEN } from "./fixture.ts";

const BOOTSTRAP = "bootstrap-token-for-tests-0123456789abcdef";
const inAYear = () => new Date(Date.now() + 365 * 86_400_000).toISOString();

// biome-ignore lint/suspicious/noExplicitAny: answers are read field by field.
type Json = Record<string, any>;

export function firstUserCases(open: () => Promise<Database>) {
  let db: Database;
  let deps: Deps;
  let app: ControlPlaneApp;
  const call = async (
    method: string,
    path: string,
    opts: { token?: string; body?: unknown; on?: ControlPlaneApp } = {},
  ) => {
    const headers: Record<string, string> = { "user-agent": "runlet-tests" };
    if (opts.token) headers.authorization = `Bearer ${opts.token}`;
    if (opts.body !== undefined) headers["content-type"] = "application/json";
    const res = await (opts.on ?? app).request(path, {
      method,
      headers,
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
    });
    return { status: res.status, body: (await res.json().catch(() => null)) as Json };
  };
  const claim = (body: unknown, token = BOOTSTRAP, on?: ControlPlaneApp) =>
    call("POST", "/v2/init", { token, body, on });
  const tally = async () => {
    const n = async (table: typeof users | typeof projects | typeof auditLog) =>
      (await db.select({ n: count() }).from(table))[0]?.n;
    return {
      users: await n(users),
      projects: await n(projects),
      memberships: (await db.select({ n: count() }).from(memberships))[0]?.n,
      tokens: (await db.select({ n: count() }).from(tokens))[0]?.n,
      audit: await n(auditLog),
    };
  };
  const nothing = { users: 0, projects: 0, memberships: 0, tokens: 0, audit: 0 };

  beforeAll(async () => {
    db = await open();
    deps = { ...(await fixtureDeps(db)), bootstrapToken: BOOTSTRAP, apiUrl: "https://api.test" };
    app = createControlPlane(deps);
  });

  describe("POST /v2/init while there is no user", () => {
    it("is 403 on a control plane without a usable bootstrap token", async () => {
      for (const [bootstrapToken, words] of [
        [undefined, /has no bootstrap token/],
        ["too-short", /at least 32 characters/],
        [INTERNAL_TOKEN, /not be the internal token/],
      ] as const) {
        const on = createControlPlane({ ...deps, bootstrapToken });
        const res = await claim({ name: "Eve", expiresAt: inAYear() }, bootstrapToken, on);
        expect(res.status).toBe(403);
        expect(res.body.message).toMatch(words);
      }
      expect(await tally()).toEqual(nothing);
    });

    it("is 401 without the bootstrap token: none, another, or the internal token", async () => {
      const logged = vi.spyOn(console, "error").mockImplementation(() => {});
      try {
        const body = { name: "Eve", expiresAt: inAYear() };
        const missing = await call("POST", "/v2/init", { body });
        expect(missing).toMatchObject({ status: 401, body: { code: "unauthorized" } });
        for (const token of [INTERNAL_TOKEN, `${BOOTSTRAP}x`, "rlh_host-token"]) {
          const res = await claim(body, token);
          expect(res.status).toBe(401);
          expect(res.body.message).toMatch(/not this control plane's bootstrap token/);
        }
        // A wrong try is logged with where it came from, never with what it sent.
        const lines = logged.mock.calls.map((args) => args.join(" ")).join("\n");
        expect(lines).toMatch(/wrong bootstrap token, from 203\.0\.113\.7/);
        expect(lines).not.toContain(INTERNAL_TOKEN);
        expect(lines).not.toContain(BOOTSTRAP);
      } finally {
        logged.mockRestore();
      }
      expect(await tally()).toEqual(nothing);
    });

    it("is 400 naming the field for a bad body, and writes nothing", async () => {
      for (const [body, field] of [
        [{ expiresAt: inAYear() }, /name/],
        [{ name: "Ada" }, /expiresAt/],
        [{ name: "Ada", expiresAt: "2001-01-01T00:00:00Z" }, /expiresAt: must be in the future/],
        [{ name: "Ada", expiresAt: inAYear(), operator: false }, /operator/],
        [{ name: "Ada", expiresAt: inAYear(), plan: "gold" }, /plan/],
        [{ name: " ", expiresAt: inAYear() }, /name/],
      ] as const) {
        const res = await claim(body);
        expect(res.status, JSON.stringify(body)).toBe(400);
        expect(res.body.message).toMatch(field);
      }
      expect(await tally()).toEqual(nothing);
    });
  });

  /** The first user's claim, as its answer gave it. */
  let first: Json;

  describe("the first user", () => {
    it("is made once, by one of two claims at once; the other is 409", async () => {
      const [a, b] = await Promise.all([
        claim({ name: "Ada", project: "acme", plan: "pro", expiresAt: inAYear() }),
        claim({ name: "Bob", expiresAt: inAYear() }),
      ]);
      const made = [a, b].filter((r) => r.status === 201);
      expect(made).toHaveLength(1);
      expect([a, b].find((r) => r.status !== 201)).toMatchObject({
        status: 409,
        body: { code: "conflict", message: expect.stringMatching(/already has its first user/) },
      });
      first = made[0]?.body as Json;
      expect(first).toMatchObject({
        user: { id: expect.stringMatching(/^usr_/), operator: true },
        project: { id: expect.stringMatching(/^prj_/) },
        token: expect.any(String),
        apiUrl: "https://api.test",
      });
      // One user, one project and its membership, one token, two audit entries: nothing of the
      // claim that lost.
      expect(await tally()).toEqual({ users: 1, projects: 1, memberships: 1, tokens: 1, audit: 2 });
    });

    it("owns its project, and is an operator", async () => {
      const token = first.token as string;
      const projectId = first.project.id as string;
      expect((await call("GET", `/v2/projects/${projectId}/apps`, { token })).status).toBe(200);
      expect((await call("GET", "/v2/hosts", { token })).status).toBe(200);
      const made = await call("POST", "/v2/projects", { token, body: { name: "second" } });
      expect(made.status).toBe(201);
    });

    it("is on its project's audit log: the project's creation and the user's", async () => {
      const { token, project, user } = first;
      const res = await call("GET", `/v2/projects/${project.id}/audit-log`, { token });
      expect(res.status).toBe(200);
      const entries = res.body.logs as Json[];
      const actor = { type: "user", id: user.id, name: user.name };
      expect(entries.map((e) => e.action).sort()).toEqual(["projects.create", "users.create"]);
      expect(entries.find((e) => e.action === "users.create")).toMatchObject({
        actor,
        outcome: "success",
        target: { type: "user", id: user.id },
        ip: "203.0.113.7",
        userAgent: "runlet-tests",
        metadata: { operator: true, role: "owner", by: "bootstrap token" },
      });
      expect(entries.find((e) => e.action === "projects.create")).toMatchObject({
        actor,
        target: { type: "project", id: project.id },
      });
      expect(JSON.stringify(entries)).not.toContain(BOOTSTRAP);
    });

    it("cannot be made again: 409 with the right token, 401 with a wrong one", async () => {
      const again = await claim({ name: "Mallory", expiresAt: inAYear() });
      expect(again).toMatchObject({ status: 409, body: { code: "conflict" } });
      vi.spyOn(console, "error").mockImplementationOnce(() => {});
      expect((await claim({ name: "Mallory", expiresAt: inAYear() }, INTERNAL_TOKEN)).status).toBe(
        401,
      );
      expect((await tally()).users).toBe(1);
    });
  });

  describe("POST /v2/projects/{id}/users", () => {
    const add = (token: string, projectId: string, body: unknown) =>
      call("POST", `/v2/projects/${projectId}/users`, { token, body });
    const operator = () => ({
      token: first.token as string,
      projectId: first.project.id as string,
    });

    it("lets the operator add a member, whose token works there and nowhere more", async () => {
      const opToken = operator();
      const ann = await add(opToken.token, opToken.projectId, {
        name: "Ann",
        expiresAt: inAYear(),
      });
      expect(ann).toMatchObject({
        status: 201,
        body: { id: expect.stringMatching(/^usr_/), role: "member", operator: false },
      });
      const token = ann.body.token as string;
      expect((await call("GET", `/v2/projects/${opToken.projectId}/apps`, { token })).status).toBe(
        200,
      );
      const log = await call("GET", `/v2/projects/${opToken.projectId}/audit-log`, { token });
      expect(log.status).toBe(403);
      expect((await call("GET", "/v2/hosts", { token })).status).toBe(403);
      // A member adds no one, nor does an owner who is not an operator.
      const byMember = await add(token, opToken.projectId, { name: "X", expiresAt: inAYear() });
      expect(byMember.status).toBe(403);
      const mine = await call("POST", "/v2/projects", { token, body: { name: "anns" } });
      expect(mine.status).toBe(201);
      const byOwner = await add(token, mine.body.id, { name: "Y", expiresAt: inAYear() });
      expect(byOwner).toMatchObject({ status: 403, body: { message: /only an operator/ } });
      // That refusal is on the record of the project it was tried in.
      const refused = await call("GET", `/v2/projects/${mine.body.id}/audit-log`, {
        token,
      });
      expect(refused.body.logs[0]).toMatchObject({
        action: "users.create",
        outcome: "failure",
        metadata: { status: 403 },
      });
    });

    it("makes another operator only when asked", async () => {
      const opToken = operator();
      const body = { name: "Otto", role: "owner", operator: true, expiresAt: inAYear() };
      const otto = await add(opToken.token, opToken.projectId, body);
      expect(otto).toMatchObject({ status: 201, body: { role: "owner", operator: true } });
      expect((await call("GET", "/v2/hosts", { token: otto.body.token })).status).toBe(200);
      const log = await call("GET", `/v2/projects/${opToken.projectId}/audit-log`, {
        token: opToken.token,
      });
      expect(log.body.logs[0]).toMatchObject({
        action: "users.create",
        outcome: "success",
        actor: { id: first.user.id },
        target: { type: "user", id: otto.body.id },
        metadata: { name: "Otto", role: "owner", operator: true },
      });
    });

    it("is 400 for a bad body, and writes nothing", async () => {
      const opToken = operator();
      const before = await tally();
      for (const body of [
        { name: "Z" },
        { name: "Z", expiresAt: inAYear(), role: "admin" },
        { name: "Z", expiresAt: inAYear(), operator: "yes" },
        { name: "Z", expiresAt: inAYear(), token: "mine" },
      ]) {
        expect((await add(opToken.token, opToken.projectId, body)).status).toBe(400);
      }
      const after = await tally();
      expect({ ...after, audit: before.audit }).toEqual(before);
    });
  });
}
