/**
 * `DELETE /v2/projects/{id}` on libSQL and on D1: an owner deletes a project with no apps (204),
 * after which every route is 404 for it, to whoever asks; its service accounts, secrets,
 * memberships, sign-in links go in the same batch as its audit entry. Refused with 409 while it
 * has apps (nothing changed), 403 to a member; both refusals audited.
 */
import { eq } from "drizzle-orm";
import { beforeAll, expect, it } from "vitest";
import { newId } from "../../common/ids.ts";
import { issueToken } from "../auth/tokens.ts";
import type { Database } from "../db/index.ts";
import { apps, memberships, projects, secrets, signInLinks, users } from "../db/schema.ts";
import { auditRows } from "./audit-rows.ts";
import {
  bundleFiles,
  createFixture,
  type Fixture,
  INTERNAL_TOKEN,
  noRuntimeHosts,
} from "./fixture.ts";
import { dashboardCookie } from "./owner-rows.ts";

// biome-ignore lint/suspicious/noExplicitAny: answers are read field by field.
type Json = Record<string, any>;

const DAY = 86_400_000;

export function deleteProjectCases(open: () => Promise<Database>) {
  let f: Fixture;
  /** Run as a deploy's start check starts its replica (a host's start takes seconds). */
  let whileStarting: (() => Promise<void>) | undefined;
  beforeAll(async () => {
    f = await createFixture(await open(), {
      hosts: {
        ...noRuntimeHosts,
        start: async (...args) => {
          await whileStarting?.();
          return noRuntimeHosts.start(...args);
        },
      },
    });
  });

  const answer = async (res: Response) => ({
    status: res.status,
    body: (await res.json()) as Json,
  });
  const remove = (projectId: string, token = f.owner.token) =>
    f.call("DELETE", `/v2/projects/${projectId}`, { token });

  /** A user of `projectId` with the role, and a token: `operator` runs this Runlet. */
  async function person(projectId: string | null, role: "owner" | "member", operator = false) {
    const id = newId("usr");
    await f.db
      .insert(users)
      .values({ id, name: `u-${id.slice(-4)}`, createdAt: Date.now(), operator });
    if (projectId) await f.db.insert(memberships).values({ projectId, userId: id, role });
    const expiresAt = new Date(Date.now() + DAY);
    const { token } = await issueToken(f.db, f.deps.keys, { subject: id, expiresAt });
    return { id, token };
  }

  async function serviceAccount(projectId: string, name: string) {
    const res = await f.call("POST", `/v2/projects/${projectId}/service-accounts`, {
      body: { name, role: "owner", expiresAt: new Date(Date.now() + DAY).toISOString() },
    });
    expect(res.status).toBe(201);
    return (await res.json()) as { id: string; token: string };
  }

  async function deploy(projectId: string, name: string) {
    const files = bundleFiles({
      "runlet.toml": `name = "${name}"\n`,
      "main.mjs": "export const run = () => 1;",
    });
    const res = await f.call("POST", `/v2/projects/${projectId}/apps`, { body: { files } });
    expect(res.status).toBe(201);
  }

  it("deletes an empty project: 204, then 404 'was deleted' everywhere, for its owner and an operator", async () => {
    const projectId = await f.addProject();
    const operator = await person(null, "owner", true);
    const name = (await answer(await f.call("GET", `/v2/projects/${projectId}`))).body.name;
    expect((await remove(projectId)).status).toBe(204);

    for (const token of [f.owner.token, operator.token]) {
      for (const path of [
        "",
        "/apps",
        "/apps/hello",
        "/audit-log",
        "/runs",
        "/secrets",
        "/service-accounts",
        "/users",
      ]) {
        const got = await answer(
          await f.call("GET", `/v2/projects/${projectId}${path}`, { token }),
        );
        expect([path, got.status, got.body.message]).toEqual([
          path,
          404,
          expect.stringContaining(`project '${projectId}' was deleted: pick another`),
        ]);
      }
      const list = await answer(await f.call("GET", "/v2/projects", { token }));
      expect(list.body.projects.map((p: Json) => p.id)).not.toContain(projectId);
    }
    // Deleting it again, deploying or renaming in it: 404 too.
    expect((await answer(await remove(projectId))).body.message).toMatch(/was deleted/);
    const rename = await f.call("PATCH", `/v2/projects/${projectId}`, { body: { name: "back" } });
    expect(rename.status).toBe(404);
    // The row is kept, marked: its audit entries still name it, with the success entry last.
    const [row] = await f.db.select().from(projects).where(eq(projects.id, projectId));
    expect(row).toMatchObject({ deletedBy: f.owner.id, deletedAt: expect.any(Number) });
    const [entry] = await auditRows(f.db, projectId);
    expect(entry).toMatchObject({
      action: "projects.delete",
      outcome: "success",
      actorId: f.owner.id,
      targetType: "project",
      targetId: projectId,
      metadata: { name },
    });
  });

  it("revokes its service accounts, deletes its secrets, memberships and sign-in links", async () => {
    const projectId = await f.addProject();
    const sa = await serviceAccount(projectId, "ci");
    expect((await f.call("GET", "/v2/projects", { token: sa.token })).status).toBe(200);
    const put = await f.call("PUT", `/v2/projects/${projectId}/secrets/DB_URL`, {
      body: { value: "x" },
    });
    expect(put.status).toBe(204);
    const member = await person(projectId, "member");
    // Another project keeps the member's dashboard session going; this one's link goes.
    const link = await f.call("POST", `/v2/projects/${projectId}/dashboard-links`, {
      token: member.token,
    });
    expect(link.status).toBe(201);

    // Dashboard sessions in it: the owner's (in other projects too) and a user's in no other.
    const loner = await person(projectId, "member");
    const lonerCookie = await dashboardCookie(f, projectId, loner.token);
    const ownerCookie = await dashboardCookie(f, projectId);
    const page = (cookie: string) => f.app.request("/dashboard/runs", { headers: { cookie } });
    expect((await page(lonerCookie)).status).toBe(200);

    expect((await remove(projectId)).status).toBe(204);

    // The loner's session ended, for good (added to a project again, the cookie stays dead).
    const ended = await page(lonerCookie);
    expect([ended.status, ended.headers.get("location")]).toEqual([
      303,
      `/dashboard/login?next=${encodeURIComponent("/dashboard/runs")}&ended=project`,
    ]);
    await f.db
      .insert(memberships)
      .values({ projectId: f.projectId, userId: loner.id, role: "member" });
    expect((await page(lonerCookie)).status).toBe(303);
    // The owner's shows another of their projects.
    const shown = await page(ownerCookie);
    expect(shown.status).toBe(200);
    expect(await shown.text()).not.toContain(projectId);

    const bySa = await answer(await f.call("GET", "/v2/projects", { token: sa.token }));
    expect(bySa).toEqual({
      status: 401,
      body: expect.objectContaining({ message: "token has been revoked" }),
    });
    expect(await f.db.select().from(secrets).where(eq(secrets.projectId, projectId))).toEqual([]);
    expect(
      await f.db.select().from(memberships).where(eq(memberships.projectId, projectId)),
    ).toEqual([]);
    expect(
      await f.db.select().from(signInLinks).where(eq(signInLinks.projectId, projectId)),
    ).toEqual([]);
    const url = new URL(((await link.json()) as { url: string }).url);
    const signIn = await f.app.request(url.pathname + url.search);
    expect(signIn.status).toBe(400);
    // The member's token still works (on no project now), and reports runs to it are skipped.
    const theirs = await answer(await f.call("GET", "/v2/projects", { token: member.token }));
    expect(theirs).toEqual({ status: 200, body: { projects: [] } });
    const report = await f.call("POST", "/internal/runs", {
      token: INTERNAL_TOKEN,
      body: {
        runs: [
          {
            id: newId("run"),
            projectId,
            app: "a",
            function: "run",
            async: true,
            status: "queued",
            createdAt: Date.now(),
          },
        ],
      },
    });
    expect(await report.json()).toEqual({ recorded: 0, skipped: 1 });
  });

  it("is 409 while the project has apps, naming them, and changes nothing", async () => {
    const projectId = await f.addProject();
    for (const name of ["a1", "a2", "a3", "a4", "a5", "a6", "a7"]) await deploy(projectId, name);
    const sa = await serviceAccount(projectId, "ci");
    await f.call("PUT", `/v2/projects/${projectId}/secrets/KEEP`, { body: { value: "kept" } });

    const refused = await answer(await remove(projectId));
    expect(refused).toEqual({
      status: 409,
      body: {
        code: "conflict",
        message: `project '${projectId}' still has 7 apps: 'a1', 'a2', 'a3', 'a4', 'a5' and 2 more. Delete each first (runlet apps delete NAME, or DELETE /v2/projects/${projectId}/apps/NAME), then the project`,
      },
    });
    expect((await f.call("GET", `/v2/projects/${projectId}`, { token: sa.token })).status).toBe(
      200,
    );
    const secret = await answer(await f.call("GET", `/v2/projects/${projectId}/secrets/KEEP`));
    expect(secret.body.value).toBe("kept");

    // One app left: named alone; none left: deleted.
    for (const name of ["a1", "a2", "a3", "a4", "a5", "a6"])
      expect((await f.call("DELETE", `/v2/projects/${projectId}/apps/${name}`)).status).toBe(204);
    expect((await answer(await remove(projectId))).body.message).toContain(
      "still has an app: 'a7'. Delete it first",
    );
    expect((await f.call("DELETE", `/v2/projects/${projectId}/apps/a7`)).status).toBe(204);
    expect((await remove(projectId)).status).toBe(204);
  });

  it("is 403 to a member and to another project's owner, audited as a failure in the project", async () => {
    const member = await answer(await remove(f.projectId, f.member.token));
    expect(member).toEqual({
      status: 403,
      body: {
        code: "forbidden",
        message: `only the project owner may do this: your role in it is member (an owner may make you one: runlet users role ${f.member.id} owner)`,
      },
    });
    const [entry] = await auditRows(f.db, f.projectId);
    expect(entry).toMatchObject({
      action: "projects.delete",
      outcome: "failure",
      actorId: f.member.id,
      metadata: { status: 403 },
    });
    expect((await remove(f.projectId, f.outsider.token)).status).toBe(403);
    expect((await f.call("GET", `/v2/projects/${f.projectId}`)).status).toBe(200);
  });

  it("lets no app be made in a deleted project, whatever began before the delete", async () => {
    // A first deploy, deleted under while its replica starts: 404, and no app.
    const racing = await f.addProject();
    let removed: number | undefined;
    whileStarting = async () => {
      removed = (await remove(racing)).status;
    };
    const files = bundleFiles({
      "runlet.toml": 'name = "late"\n',
      "main.mjs": "export const run = () => 1;",
    });
    const deployed = await answer(
      await f.call("POST", `/v2/projects/${racing}/apps`, { body: { files } }),
    );
    whileStarting = undefined;
    expect(removed).toBe(204);
    expect(deployed).toEqual({
      status: 404,
      body: {
        code: "not_found",
        message: expect.stringContaining(`project '${racing}' was deleted`),
      },
    });
    expect(await f.db.select().from(apps).where(eq(apps.projectId, racing))).toEqual([]);

    const projectId = await f.addProject();
    expect((await remove(projectId)).status).toBe(204);
    const now = Date.now();
    const app = { id: newId("app"), projectId, name: "late", runtime: "managed" as const };
    await expect(
      f.db.insert(apps).values({ ...app, currentVersion: 1, createdAt: now, updatedAt: now }),
    ).rejects.toThrow();
    expect(await f.db.select().from(apps).where(eq(apps.projectId, projectId))).toEqual([]);
  });
}
