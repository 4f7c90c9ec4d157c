/**
 * A project's users over their lifetime, on libSQL and on D1: listing them, adding an existing
 * user, changing a role, removing one (never the last owner), and a user's token — renewed by
 * its holder, issued anew or revoked by an operator (docs/deploy.md, "More users and projects").
 */
import { eq } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { newId } from "../../common/ids.ts";
import { createControlPlane } from "../app.ts";
import { issueToken } from "../auth/tokens.ts";
import type { Database } from "../db/index.ts";
import { memberships, projects, users } from "../db/schema.ts";
import { auditRows } from "./audit-rows.ts";
import { createFixture, type Fixture, type Person } from "./fixture.ts";

// biome-ignore lint/suspicious/noExplicitAny: answers are read field by field.
type Json = Record<string, any>;
const inDays = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString();

export function userLifecycleCases(open: () => Promise<Database>) {
  let f: Fixture;
  /** The fixture's owner, made an operator; `boss` owns the project too but is not one. */
  let operator: Person;
  let boss: Person;
  const send = async (method: string, path: string, token: string | null, body?: unknown) => {
    const res = await f.call(method, path, { token, body });
    return { status: res.status, body: (await res.json().catch(() => null)) as Json };
  };
  const users$ = (projectId = f.projectId) => `/v2/projects/${projectId}/users`;
  const one = (userId: string, projectId = f.projectId) => `${users$(projectId)}/${userId}`;
  const person = async (name: string, expiresAt = Date.now() + 86_400_000): Promise<Person> => {
    const id = newId("usr");
    await f.db.insert(users).values({ id, name, createdAt: Date.now() });
    const { token } = await issueToken(f.db, f.deps.keys, {
      subject: id,
      expiresAt: new Date(expiresAt),
    });
    return { id, name, token };
  };
  const join = (projectId: string, who: Person, role: "owner" | "member") =>
    f.db.insert(memberships).values({ projectId, userId: who.id, role });
  const newest = async (projectId = f.projectId) => (await auditRows(f.db, projectId))[0];
  const apps = (token: string, projectId = f.projectId) =>
    send("GET", `/v2/projects/${projectId}/apps`, token);

  beforeAll(async () => {
    f = await createFixture(await open());
    operator = f.owner;
    await f.db.update(users).set({ operator: true }).where(eq(users.id, operator.id));
    boss = await person("Bo Boss");
    await join(f.projectId, boss, "owner");
  });

  describe("every route of a project's users", () => {
    const routes = () => {
      const user = f.member.id;
      const role = { role: "member" };
      const expiry = { expiresAt: inDays(5) };
      return [
        ["GET", "", undefined],
        ["PUT", `/${user}`, role],
        ["PATCH", `/${user}`, role],
        ["DELETE", `/${user}`, undefined],
        ["POST", `/${user}/token`, expiry],
        ["DELETE", `/${user}/token`, undefined],
      ] as const;
    };

    it("is 401 without a token or with a garbled one, 403 for a member, 404 for no project", async () => {
      for (const [method, tail, body] of routes()) {
        const what = `${method} …/users${tail}`;
        expect((await send(method, users$() + tail, null, body)).status, what).toBe(401);
        expect((await send(method, users$() + tail, "not.a.jwt", body)).status, what).toBe(401);
        expect((await send(method, users$() + tail, f.member.token, body)).status, what).toBe(403);
        const missing = await send(method, users$("prj_nope") + tail, operator.token, body);
        expect(missing.status, what).toBe(404);
      }
      expect(
        (await send("POST", "/v2/me/token", "not.a.jwt", { expiresAt: inDays(5) })).status,
      ).toBe(401);
    });

    it("is 400 for a user id longer than any id, naming it", async () => {
      const long = "u".repeat(65);
      for (const [method, tail, body] of routes().slice(1)) {
        const res = await send(
          method,
          users$() + tail.replace(f.member.id, long),
          operator.token,
          body,
        );
        expect(res.status, `${method} ${tail}`).toBe(400);
        expect(res.body.message).toMatch(/userId/);
      }
    });
  });

  describe("GET /v2/projects/{id}/users", () => {
    it("lists every user with role, operator flag and token expiry, never a token", async () => {
      const res = await send("GET", users$(), operator.token);
      expect(res.status).toBe(200);
      expect(res.body.users.map((u: Json) => [u.name, u.role, u.operator])).toEqual([
        ["Bo Boss", "owner", false],
        ["Olive Owner", "owner", true],
        ["Mel Member", "member", false],
      ]);
      const mel = res.body.users.find((u: Json) => u.id === f.member.id);
      expect(Date.parse(mel.tokenExpiresAt)).toBeGreaterThan(Date.now() + 300 * 86_400_000);
      expect(mel).toHaveProperty("tokenLastUsedAt");
      const text = JSON.stringify(res.body);
      for (const p of [operator, boss, f.member]) expect(text).not.toContain(p.token);
    });

    it("is 401 without a token, 403 for a member, 404 for an unknown project", async () => {
      expect((await send("GET", users$(), null)).status).toBe(401);
      const member = await send("GET", users$(), f.member.token);
      expect(member).toMatchObject({ status: 403, body: { code: "forbidden" } });
      expect((await send("GET", users$("prj_nope"), operator.token)).status).toBe(404);
    });
  });

  describe("PUT /v2/projects/{id}/users/{userId}: adding an existing user", () => {
    it("adds the user with the role given; they use the project at once; audited", async () => {
      const res = await send("PUT", one(f.outsider.id), operator.token, { role: "member" });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({ id: f.outsider.id, name: "Otto Outsider", role: "member" });
      expect((await apps(f.outsider.token)).status).toBe(200);
      expect(await newest()).toMatchObject({
        action: "users.add",
        outcome: "success",
        actorId: operator.id,
        targetType: "user",
        targetId: f.outsider.id,
        metadata: { name: "Otto Outsider", role: "member" },
      });
    });

    it("refuses a member again (409), an unknown user (404), bad input (400)", async () => {
      const again = await send("PUT", one(f.outsider.id), operator.token, { role: "owner" });
      expect(again).toMatchObject({ status: 409, body: { code: "conflict" } });
      expect(again.body.message).toMatch(/already a member .* as member: change their role/);
      expect(await newest()).toMatchObject({ action: "users.add", outcome: "failure" });
      const ghost = await send("PUT", one("usr_ghost"), operator.token, { role: "member" });
      expect(ghost).toMatchObject({ status: 404, body: { message: "user 'usr_ghost' not found" } });
      for (const body of [{ role: "admin" }, {}, { role: "member", extra: 1 }]) {
        expect((await send("PUT", one(f.member.id), operator.token, body)).status).toBe(400);
      }
    });

    it("is for an operator who owns the project: 403 for an owner who is not one", async () => {
      const stranger = await person("Sam Stranger");
      const res = await send("PUT", one(stranger.id), boss.token, { role: "member" });
      expect(res.status).toBe(403);
      expect(res.body.message).toBe("only an operator of this Runlet may add users to a project");
      expect(await newest()).toMatchObject({
        action: "users.add",
        outcome: "failure",
        actorId: boss.id,
        targetId: stranger.id,
        metadata: { status: 403 },
      });
      const member = await send("PUT", one(stranger.id), f.member.token, { role: "member" });
      expect(member.status).toBe(403);
      // Both needs said at once: "only the project owner" sent a member to become one, who was
      // then refused as no operator.
      expect(member.body.message).toBe(
        "only an operator of this Runlet who owns the project may add users to a project",
      );
      const create = await send("POST", users$(), f.member.token, {
        name: "Mo",
        expiresAt: inDays(5),
      });
      expect(create.body.message).toBe(
        "only an operator of this Runlet who owns the project may add users",
      );
      const token = await send("POST", `${one(stranger.id)}/token`, f.member.token, {
        expiresAt: inDays(5),
      });
      expect(token.body.message).toBe(
        "only an operator of this Runlet who owns the project may issue tokens to users",
      );
      expect((await send("PUT", one(stranger.id), null, { role: "member" })).status).toBe(401);
      expect((await send("GET", users$(), operator.token)).body.users).toHaveLength(4);
    });
  });

  describe("PATCH and DELETE /v2/projects/{id}/users/{userId}", () => {
    it("changes a role both ways, audited with from and to", async () => {
      const up = await send("PATCH", one(f.outsider.id), boss.token, { role: "owner" });
      expect(up).toMatchObject({ status: 200, body: { id: f.outsider.id, role: "owner" } });
      expect(await newest()).toMatchObject({
        action: "users.set_role",
        outcome: "success",
        metadata: { from: "member", to: "owner" },
      });
      const down = await send("PATCH", one(f.outsider.id), boss.token, { role: "member" });
      expect(down).toMatchObject({ status: 200, body: { role: "member" } });
    });

    it("refuses: 404 not a member, 400 bad role, 403 a member, 401 no token", async () => {
      const stranger = await person("Nia Nobody");
      const res = await send("PATCH", one(stranger.id), boss.token, { role: "owner" });
      expect(res).toMatchObject({ status: 404, body: { code: "not_found" } });
      expect(res.body.message).toBe(`user '${stranger.id}' is not a member of this project`);
      expect((await send("PATCH", one(f.member.id), boss.token, { role: "king" })).status).toBe(
        400,
      );
      const self = await send("PATCH", one(f.member.id), f.member.token, { role: "owner" });
      expect(self.status).toBe(403);
      expect((await send("PATCH", one(f.member.id), null, { role: "owner" })).status).toBe(401);
      expect((await send("DELETE", one(stranger.id), boss.token)).status).toBe(404);
      expect((await send("DELETE", one(f.outsider.id), f.member.token)).status).toBe(403);
    });

    it("removes a user: the project refuses them at once; audited", async () => {
      const res = await f.call("DELETE", one(f.outsider.id), { token: boss.token });
      expect(res.status).toBe(204);
      const after = await apps(f.outsider.token);
      expect(after).toMatchObject({ status: 403 });
      expect(after.body.message).toBe(`you are not a member of project '${f.projectId}'`);
      // Their token still works where they belong.
      expect((await apps(f.outsider.token, f.outsiderProjectId)).status).toBe(200);
      expect(await newest()).toMatchObject({
        action: "users.remove",
        outcome: "success",
        actorId: boss.id,
        targetId: f.outsider.id,
        metadata: { name: "Otto Outsider", role: "member" },
      });
    });

    it("never removes or demotes the last owner (409 saying why), on the record", async () => {
      const solo = await person("Ula Unique");
      const projectId = newId("prj");
      await f.db.batch([
        f.db.insert(projects).values({
          id: projectId,
          name: "solo",
          plan: "hobby",
          createdAt: Date.now(),
        }),
        join(projectId, solo, "owner"),
      ]);
      const demote = await send("PATCH", one(solo.id, projectId), solo.token, { role: "member" });
      expect(demote).toMatchObject({ status: 409, body: { code: "conflict" } });
      expect(demote.body.message).toMatch(/cannot demote Ula Unique .*last owner/);
      const remove = await send("DELETE", one(solo.id, projectId), solo.token);
      expect(remove.status).toBe(409);
      expect(remove.body.message).toMatch(/cannot remove Ula Unique .*last owner/);
      const log = await auditRows(f.db, projectId);
      expect(log.map((e) => [e.action, e.outcome])).toEqual([
        ["users.remove", "failure"],
        ["users.set_role", "failure"],
      ]);
      const still = await send("GET", users$(projectId), solo.token);
      expect(still.body.users).toMatchObject([{ id: solo.id, role: "owner" }]);
    });

    it("refuses an add that another request made between the check and the change (409), keeping that one's role", async () => {
      const late = await person("Lea Late");
      const projectId = await f.addProject();
      await f.db
        .update(memberships)
        .set({ role: "owner" })
        .where(eq(memberships.projectId, projectId));
      const db = new Proxy(f.db, {
        get(target, key, receiver) {
          if (key !== "batch") return Reflect.get(target, key, receiver);
          return async (statements: Parameters<Database["batch"]>[0]) => {
            await target.insert(memberships).values({ projectId, userId: late.id, role: "owner" });
            return target.batch(statements);
          };
        },
      });
      const raced = createControlPlane({ ...f.deps, db });
      const res = await raced.request(one(late.id, projectId), {
        method: "PUT",
        headers: { authorization: `Bearer ${operator.token}`, "content-type": "application/json" },
        body: JSON.stringify({ role: "member" }),
      });
      expect(res.status).toBe(409);
      expect(((await res.json()) as Json).message).toMatch(
        /added to this project by another request/,
      );
      const [row] = await f.db.select().from(memberships).where(eq(memberships.userId, late.id));
      expect(row?.role).toBe("owner");
      const log = await auditRows(f.db, projectId);
      expect(log.map((e) => [e.action, e.outcome])).toEqual([["users.add", "failure"]]);
    });

    it("keeps an owner when the other stops being one between the check and the change", async () => {
      const a = await person("Ann A");
      const b = await person("Ben B");
      const projectId = await f.addProject();
      await f.db.delete(memberships).where(eq(memberships.projectId, projectId));
      await f.db.batch([join(projectId, a, "owner"), join(projectId, b, "owner")]);
      // Another request demotes Ben after this one checked that Ann is not the last owner, just
      // before its own change: the statement itself must refuse it.
      const db = new Proxy(f.db, {
        get(target, key, receiver) {
          if (key !== "batch") return Reflect.get(target, key, receiver);
          return async (statements: Parameters<Database["batch"]>[0]) => {
            await target
              .update(memberships)
              .set({ role: "member" })
              .where(eq(memberships.userId, b.id));
            return target.batch(statements);
          };
        },
      });
      const raced = createControlPlane({ ...f.deps, db });
      for (const method of ["PATCH", "DELETE"]) {
        await f.db.update(memberships).set({ role: "owner" }).where(eq(memberships.userId, b.id));
        const res = await raced.request(one(a.id, projectId), {
          method,
          headers: { authorization: `Bearer ${a.token}`, "content-type": "application/json" },
          body: method === "PATCH" ? JSON.stringify({ role: "member" }) : undefined,
        });
        expect(res.status).toBe(409);
        const rows = await f.db
          .select()
          .from(memberships)
          .where(eq(memberships.projectId, projectId));
        expect(rows.find((m) => m.userId === a.id)?.role).toBe("owner");
      }
      const log = await auditRows(f.db, projectId);
      expect(log.map((e) => [e.action, e.outcome])).toEqual([
        ["users.remove", "failure"],
        ["users.set_role", "failure"],
      ]);
    });
  });

  describeTokens(() => ({ f, operator, boss, send, person, join, apps, one }));
}

type Ctx = () => {
  f: Fixture;
  operator: Person;
  boss: Person;
  send: (
    method: string,
    path: string,
    token: string | null,
    body?: unknown,
  ) => Promise<{
    status: number;
    body: Json;
  }>;
  person: (name: string, expiresAt?: number) => Promise<Person>;
  join: (projectId: string, who: Person, role: "owner" | "member") => Promise<unknown>;
  apps: (token: string, projectId?: string) => Promise<{ status: number; body: Json }>;
  one: (userId: string, projectId?: string) => string;
};

function describeTokens(ctx: Ctx) {
  describe("a user's token", () => {
    it("is renewed by its holder: the new one works, the old is refused, both projects see it", async () => {
      const { f, send, person, join, apps } = ctx();
      const ivy = await person("Ivy Renew");
      await join(f.projectId, ivy, "member");
      const other = await f.addProject();
      await join(other, ivy, "member");
      const res = await send("POST", "/v2/me/token", ivy.token, { expiresAt: inDays(90) });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({ id: ivy.id, name: "Ivy Renew", revoked: 1 });
      expect(Date.parse(res.body.expiresAt)).toBeGreaterThan(Date.now() + 89 * 86_400_000);
      expect((await apps(res.body.token)).status).toBe(200);
      const old = await apps(ivy.token);
      expect(old).toMatchObject({ status: 401, body: { message: "token has been revoked" } });
      for (const projectId of [f.projectId, other]) {
        const [entry] = await auditRows(f.db, projectId);
        expect(entry).toMatchObject({
          action: "users.issue_token",
          outcome: "success",
          actorId: ivy.id,
          targetId: ivy.id,
          metadata: { name: "Ivy Renew", revoked: 1 },
        });
      }
      const listed = await send("GET", `/v2/projects/${f.projectId}/users`, ctx().operator.token);
      const row = listed.body.users.find((u: Json) => u.id === ivy.id);
      expect(row.tokenExpiresAt).toBe(res.body.expiresAt);
    });

    it("renewal refuses a past expiry (400, on the record), a service account (403), no token", async () => {
      const { f, send, person, join } = ctx();
      const pia = await person("Pia Past");
      await join(f.projectId, pia, "member");
      const past = await send("POST", "/v2/me/token", pia.token, {
        expiresAt: "2020-01-01T00:00:00Z",
      });
      expect(past).toMatchObject({
        status: 400,
        body: { message: "expiresAt: must be in the future" },
      });
      const [entry] = await auditRows(f.db, f.projectId);
      expect(entry).toMatchObject({
        action: "users.issue_token",
        outcome: "failure",
        actorId: pia.id,
      });
      expect((await ctx().apps(pia.token)).status).toBe(200);
      const sa = await send("POST", `/v2/projects/${f.projectId}/service-accounts`, f.owner.token, {
        name: "ci",
        expiresAt: inDays(5),
      });
      const refused = await send("POST", "/v2/me/token", sa.body.token, { expiresAt: inDays(5) });
      expect(refused.status).toBe(403);
      expect(refused.body.message).toMatch(/make a new service account/);
      expect((await send("POST", "/v2/me/token", null, { expiresAt: inDays(5) })).status).toBe(401);
    });

    it("an operator issues a new one to a member whose token expired", async () => {
      const { f, operator, send, person, join, apps, one } = ctx();
      const eli = await person("Eli Expired", Date.now() - 60_000);
      await join(f.projectId, eli, "member");
      expect((await send("POST", "/v2/me/token", eli.token, { expiresAt: inDays(5) })).status).toBe(
        401,
      );
      const res = await send("POST", `${one(eli.id)}/token`, operator.token, {
        expiresAt: inDays(30),
      });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({ id: eli.id, revoked: 1 });
      expect((await apps(res.body.token)).status).toBe(200);
      expect((await auditRows(f.db, f.projectId))[0]).toMatchObject({
        action: "users.issue_token",
        outcome: "success",
        actorId: operator.id,
        targetId: eli.id,
      });
    });

    it("issuing is for an operator owner (403), for a member (404), with a good expiry (400)", async () => {
      const { f, operator, boss, send, one } = ctx();
      const body = { expiresAt: inDays(3) };
      const byBoss = await send("POST", `${one(f.member.id)}/token`, boss.token, body);
      expect(byBoss.status).toBe(403);
      expect(byBoss.body.message).toBe("only an operator of this Runlet may issue tokens to users");
      expect((await auditRows(f.db, f.projectId))[0]).toMatchObject({
        action: "users.issue_token",
        outcome: "failure",
        actorId: boss.id,
      });
      const notHere = await send("POST", `${one(f.outsider.id)}/token`, operator.token, body);
      expect(notHere.status).toBe(404);
      const bad = await send("POST", `${one(f.member.id)}/token`, operator.token, {
        expiresAt: "tomorrow",
      });
      expect(bad.status).toBe(400);
      expect((await ctx().apps(f.member.token)).status).toBe(200);
    });

    it("an operator revokes a member's token: refused at once, listed as none, audited", async () => {
      const { f, operator, boss, send, person, join, apps, one } = ctx();
      const rex = await person("Rex Revoked");
      await join(f.projectId, rex, "member");
      expect((await send("DELETE", `${one(rex.id)}/token`, boss.token)).status).toBe(403);
      expect((await send("DELETE", `${one(rex.id)}/token`, rex.token)).status).toBe(403);
      expect((await send("DELETE", `${one("usr_ghost")}/token`, operator.token)).status).toBe(404);
      const res = await f.call("DELETE", `${one(rex.id)}/token`, { token: operator.token });
      expect(res.status).toBe(204);
      expect(await apps(rex.token)).toMatchObject({
        status: 401,
        body: { message: "token has been revoked" },
      });
      const listed = await send("GET", `/v2/projects/${f.projectId}/users`, operator.token);
      expect(listed.body.users.find((u: Json) => u.id === rex.id).tokenExpiresAt).toBeNull();
      expect((await auditRows(f.db, f.projectId))[0]).toMatchObject({
        action: "users.revoke_token",
        outcome: "success",
        targetId: rex.id,
        metadata: { name: "Rex Revoked", revoked: 1 },
      });
    });

    it("an operator revokes the token of a user removed from every project (it still made projects)", async () => {
      const { f, operator, boss, send, person, join, one } = ctx();
      const lea = await person("Lea Left");
      await join(f.projectId, lea, "member");
      expect((await send("DELETE", one(lea.id), boss.token)).status).toBe(204);
      // In no project, the token still makes one: the way on for someone who is to stay.
      const made = await send("POST", "/v2/projects", lea.token, { name: "lea's own" });
      expect(made.status).toBe(201);
      expect((await send("DELETE", `/v2/projects/${made.body.id}`, lea.token)).status).toBe(204);
      // Someone in another project is revoked from there, by an operator who owns it.
      const stays = await person("Sam Stays");
      await join(f.outsiderProjectId, stays, "member");
      expect((await send("DELETE", `${one(stays.id)}/token`, operator.token)).status).toBe(404);
      expect((await send("DELETE", `${one(lea.id)}/token`, boss.token)).status).toBe(403);
      const res = await f.call("DELETE", `${one(lea.id)}/token`, { token: operator.token });
      expect(res.status).toBe(204);
      const after = await send("POST", "/v2/projects", lea.token, { name: "another" });
      expect(after).toMatchObject({ status: 401, body: { message: "token has been revoked" } });
      expect((await send("GET", "/v2/projects", stays.token)).status).toBe(200);
      expect((await auditRows(f.db, f.projectId))[0]).toMatchObject({
        action: "users.revoke_token",
        outcome: "success",
        actorId: operator.id,
        targetId: lea.id,
        metadata: { name: "Lea Left", revoked: 1, inNoProject: true },
      });
    });
  });
}
