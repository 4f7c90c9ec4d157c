/**
 * An operator's way into a project they are not in, on libSQL and on D1: `GET /v2/projects?all=true`
 * lists every project, and an operator adds themselves (`PUT …/users/{their id}`) or raises their
 * own role (`PATCH`), each audited in the project, where its owners read it. Nobody else may.
 */
import { eq } from "drizzle-orm";
import { beforeAll, expect, it } from "vitest";
import type { Database } from "../db/index.ts";
import { users } from "../db/schema.ts";
import { auditRows } from "./audit-rows.ts";
import { createFixture, type Fixture } from "./fixture.ts";

// biome-ignore lint/suspicious/noExplicitAny: answers are read field by field.
type Json = Record<string, any>;

export function operatorEntryCases(open: () => Promise<Database>) {
  let f: Fixture;
  /** The outsider's project: neither the fixture's owner (an operator here) nor its member is in it. */
  let theirs: string;
  const send = async (method: string, path: string, token: string | null, body?: unknown) => {
    const res = await f.call(method, path, { token, body });
    return { status: res.status, body: (await res.json().catch(() => null)) as Json };
  };
  const membership = (userId: string) => `/v2/projects/${theirs}/users/${userId}`;
  const newest = async () => (await auditRows(f.db, theirs))[0];

  beforeAll(async () => {
    f = await createFixture(await open());
    theirs = f.outsiderProjectId;
    await f.db.update(users).set({ operator: true }).where(eq(users.id, f.owner.id));
  });

  it("lists every project of this Runlet to an operator with all=true, role null where they are not in it", async () => {
    const all = await send("GET", "/v2/projects?all=true", f.owner.token);
    expect(all.status).toBe(200);
    expect(all.body.projects.map((p: Json) => [p.id, p.role])).toEqual(
      expect.arrayContaining([
        [f.projectId, "owner"],
        [theirs, null],
      ]),
    );
    // Without it, as before: only their own.
    const own = await send("GET", "/v2/projects?all=false", f.owner.token);
    expect(own.body.projects.map((p: Json) => p.id)).toEqual([f.projectId]);
  });

  it("neither lists nor lets anyone enter a deleted project", async () => {
    const gone = await f.addProject();
    expect((await f.call("DELETE", `/v2/projects/${gone}`)).status).toBe(204);
    const all = await send("GET", "/v2/projects?all=true", f.owner.token);
    expect(all.body.projects.map((p: Json) => p.id)).not.toContain(gone);
    const enter = await send("PUT", `/v2/projects/${gone}/users/${f.owner.id}`, f.owner.token, {
      role: "owner",
    });
    expect(enter.status).toBe(404);
    expect(enter.body.message).toMatch(/was deleted/);
  });

  it("refuses all=true to anyone but an operator (403), and a value it does not take (400)", async () => {
    const member = await send("GET", "/v2/projects?all=true", f.member.token);
    expect(member).toMatchObject({
      status: 403,
      body: { message: "only an operator of this Runlet may list every project" },
    });
    const odd = await send("GET", "/v2/projects?all=yes", f.owner.token);
    expect(odd.status).toBe(400);
    expect(odd.body.message).toMatch(/all/);
  });

  it("lets an operator add no one but themselves to a project they are not in", async () => {
    const other = await send("PUT", membership(f.member.id), f.owner.token, { role: "member" });
    expect(other).toMatchObject({
      status: 403,
      body: { message: `you are not a member of project '${theirs}'` },
    });
    // A user who is not an operator may not enter on their own either; both are on the record.
    const self = await send("PUT", membership(f.member.id), f.member.token, { role: "owner" });
    expect(self.status).toBe(403);
    expect((await auditRows(f.db, theirs)).slice(0, 2)).toMatchObject([
      { action: "users.add", outcome: "failure", actorId: f.member.id },
      { action: "users.add", outcome: "failure", actorId: f.owner.id },
    ]);
  });

  it("lets an operator enter as a member, then make themselves owner, each audited as an operator's", async () => {
    const joined = await send("PUT", membership(f.owner.id), f.owner.token, { role: "member" });
    expect(joined).toMatchObject({ status: 201, body: { id: f.owner.id, role: "member" } });
    expect(await newest()).toMatchObject({
      action: "users.add",
      outcome: "success",
      actorId: f.owner.id,
      targetId: f.owner.id,
      metadata: { name: "Olive Owner", role: "member", asOperator: true },
    });
    // A member does not read the audit log; their own role they may raise, being an operator.
    const log = `/v2/projects/${theirs}/audit-log`;
    expect((await send("GET", log, f.owner.token)).status).toBe(403);
    const raised = await send("PATCH", membership(f.owner.id), f.owner.token, { role: "owner" });
    expect(raised).toMatchObject({ status: 200, body: { role: "owner" } });
    expect(await newest()).toMatchObject({
      action: "users.set_role",
      outcome: "success",
      metadata: { from: "member", to: "owner", asOperator: true },
    });
    // Now an owner: the log, and the project's owner sees how they came in.
    expect((await send("GET", log, f.owner.token)).status).toBe(200);
    const seen = await send("GET", `${log}?actor=${f.owner.id}`, f.outsider.token);
    expect(seen.body.logs.map((e: Json) => [e.action, e.outcome])).toEqual([
      ["users.set_role", "success"],
      ["audit_log.read", "failure"],
      ["users.add", "success"],
      ["users.add", "failure"],
    ]);
    // A non-operator member still may not raise their own role.
    await send("PUT", membership(f.member.id), f.owner.token, { role: "member" });
    const member = await send("PATCH", membership(f.member.id), f.member.token, { role: "owner" });
    expect(member.status).toBe(403);
  });
}
