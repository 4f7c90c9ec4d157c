/**
 * `GET /v2/projects` on libSQL and on D1: the caller's projects, each with the caller's role,
 * oldest first; a service account's own project; 401 without a working token.
 */
import { eq } from "drizzle-orm";
import { beforeAll, expect, it } from "vitest";
import type { Database } from "../db/index.ts";
import { memberships, projects } from "../db/schema.ts";
import { createFixture, type Fixture } from "./fixture.ts";

// biome-ignore lint/suspicious/noExplicitAny: answers are read field by field.
type Json = Record<string, any>;

export function listProjectsCases(open: () => Promise<Database>) {
  let f: Fixture;
  const list = async (token: string | null, query = "") => {
    const res = await f.call("GET", `/v2/projects${query}`, { token });
    return { status: res.status, body: (await res.json()) as Json };
  };

  beforeAll(async () => {
    f = await createFixture(await open());
  });

  it("gives a user every project they are in, oldest first, with their role in each", async () => {
    const second = await f.addProject("pro");
    // Made before the fixture's project, whatever the order of the inserts: it comes first.
    await f.db
      .update(projects)
      .set({ createdAt: Date.parse("2026-01-01T00:00:00Z") })
      .where(eq(projects.id, second));
    // The member joins the owner's second project as an owner there; never the outsider's.
    await f.db
      .insert(memberships)
      .values({ projectId: second, userId: f.member.id, role: "owner" });
    const owner = await list(f.owner.token);
    expect(owner.status).toBe(200);
    expect(owner.body.projects.map((p: Json) => [p.id, p.role])).toEqual([
      [second, "owner"],
      [f.projectId, "owner"],
    ]);
    expect(owner.body.projects[0]).toMatchObject({ plan: "pro", retentionDays: 90 });
    expect(owner.body.projects[0].createdAt).toBe("2026-01-01T00:00:00.000Z");
    const member = await list(f.member.token);
    expect(member.body.projects.map((p: Json) => [p.id, p.role])).toEqual([
      [second, "owner"],
      [f.projectId, "member"],
    ]);
    const outsider = await list(f.outsider.token);
    expect(outsider.body.projects.map((p: Json) => p.id)).toEqual([f.outsiderProjectId]);
  });

  it("gives a service account its own project and role, no other", async () => {
    const made = await f.call("POST", `/v2/projects/${f.projectId}/service-accounts`, {
      body: {
        name: "ci",
        role: "owner",
        expiresAt: new Date(Date.now() + 86_400_000).toISOString(),
      },
    });
    expect(made.status).toBe(201);
    const { token } = (await made.json()) as { token: string };
    const { status, body } = await list(token);
    expect(status).toBe(200);
    expect(body.projects).toEqual([expect.objectContaining({ id: f.projectId, role: "owner" })]);
  });

  it("is 401 without a token or with a garbled one, and 400 for a query it does not take", async () => {
    expect(await list(null)).toMatchObject({ status: 401, body: { message: expect.any(String) } });
    expect((await list("not.a.jwt")).status).toBe(401);
    const unknown = await list(f.owner.token, "?limit=5");
    expect(unknown.status).toBe(400);
    expect(unknown.body.message).toMatch(/limit/);
  });
}
