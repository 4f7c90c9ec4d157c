import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { auditRows } from "../testing/audit-rows.ts";
import { libsqlFixture } from "../testing/libsql.ts";

let f: Awaited<ReturnType<typeof libsqlFixture>>;

beforeAll(async () => {
  f = await libsqlFixture();
});

afterAll(() => f?.cleanup());

type Body = Record<string, unknown> & { message?: string };
const body = async (res: Response) => (await res.json()) as Body;

describe("POST /v2/projects", () => {
  it("creates a project owned by the caller, with its retention and an audit entry", async () => {
    const res = await f.call("POST", "/v2/projects", {
      token: f.member.token,
      body: { name: "  staging  ", plan: "pro" },
    });
    expect(res.status).toBe(201);
    const project = await body(res);
    expect(project).toMatchObject({ name: "staging", plan: "pro", retentionDays: 90 });
    expect(project.id).toMatch(/^prj_/);

    // The creator owns it: they may read its audit log, which starts with the creation.
    const log = await f.call("GET", `/v2/projects/${project.id}/audit-log`, {
      token: f.member.token,
    });
    expect(log.status).toBe(200);
    const { logs } = (await log.json()) as { logs: Body[] };
    expect(logs).toMatchObject([
      {
        action: "projects.create",
        outcome: "success",
        actor: { type: "user", id: f.member.id, name: f.member.name },
        target: { type: "project", id: project.id },
        metadata: { name: "staging", plan: "pro" },
      },
    ]);
    expect(log.headers.get("x-request-id")).toMatch(/^req_/);
  });

  it("defaults to the hobby plan", async () => {
    const res = await f.call("POST", "/v2/projects", { body: { name: "side" } });
    expect(await body(res)).toMatchObject({ plan: "hobby", retentionDays: 7 });
  });

  it.each([
    ["no name", {}, /^name: /],
    ["an empty name", { name: "   " }, /^name: must not be empty/],
    ["a long name", { name: "x".repeat(65) }, /^name: must be at most 64/],
    ["a control character", { name: "a\u0007b" }, /^name: must not contain control/],
    ["an unknown plan", { name: "p", plan: "gold" }, /^plan: must be one of hobby, pro/],
    ["an unknown field", { name: "p", owner: "me" }, /unknown field 'owner'/],
    ["a non-object", ["p"], /^must be an object, not an array$/],
  ])("refuses %s with 400 {message}", async (_, payload, message) => {
    const res = await f.call("POST", "/v2/projects", { body: payload });
    expect(res.status).toBe(400);
    expect((await body(res)).message).toMatch(message);
  });

  it("refuses invalid JSON with 400 and an anonymous caller with 401, whatever the body", async () => {
    expect((await f.call("POST", "/v2/projects", { body: "{nope" })).status).toBe(400);
    expect((await f.call("POST", "/v2/projects", { token: null, body: "{nope" })).status).toBe(401);
  });

  it("refuses a body not sent as JSON with 415 unsupported_media_type, saying what to send", async () => {
    const res = await f.app.request("/v2/projects", {
      method: "POST",
      headers: { authorization: `Bearer ${f.owner.token}`, "content-type": "text/plain" },
      body: '{"name":"plain"}',
    });
    expect(res.status).toBe(415);
    expect(await body(res)).toEqual({
      message: "the body must be JSON, sent with Content-Type: application/json",
      code: "unsupported_media_type",
    });
  });

  it("refuses a body over 256 KiB with 413", async () => {
    const res = await f.call("POST", "/v2/projects", {
      body: { name: "big", pad: "x".repeat(300 * 1024) },
    });
    expect(res.status).toBe(413);
    expect((await body(res)).message).toMatch(/larger than 256 KiB/);
  });
});

describe("query parameters", () => {
  it("are refused with 400 naming them on every route that declares none", async () => {
    const project = `/v2/projects/${f.projectId}`;
    for (const [method, path] of [
      ["GET", `${project}/secrets?x=1`],
      ["GET", `${project}/service-accounts?x=1`],
      ["GET", `${project}/apps?verbose=true`],
      ["POST", "/v2/projects?dryRun=1"],
    ] as const) {
      const res = await f.call(method, path, method === "POST" ? { body: { name: "q" } } : {});
      expect({ path, status: res.status }).toEqual({ path, status: 400 });
      expect((await body(res)).message).toMatch(/^unknown query parameter '/);
    }
  });
});

describe("GET /v2/projects/{id}", () => {
  it("answers the project with the caller's role to its owner and its members, 403 to others", async () => {
    const owner = await f.call("GET", `/v2/projects/${f.projectId}`);
    expect(owner.status).toBe(200);
    const listed = (await body(await f.call("GET", "/v2/projects"))).projects as Body[];
    expect(await body(owner)).toEqual(listed.find((p) => p.id === f.projectId));
    expect(listed.find((p) => p.id === f.projectId)).toMatchObject({ role: "owner" });

    const member = await f.call("GET", `/v2/projects/${f.projectId}`, { token: f.member.token });
    expect(await body(member)).toMatchObject({ id: f.projectId, role: "member" });
    const outsider = await f.call("GET", `/v2/projects/${f.projectId}`, {
      token: f.outsider.token,
    });
    expect(outsider.status).toBe(403);
    const missing = await f.call("GET", "/v2/projects/prj_missing");
    expect(missing.status).toBe(404);
  });
});

describe("PATCH /v2/projects/{id}", () => {
  it("changes name and plan for the owner and records what changed", async () => {
    const projectId = await f.addProject();
    const res = await f.call("PATCH", `/v2/projects/${projectId}`, {
      body: { plan: "enterprise" },
    });
    expect(res.status).toBe(200);
    expect(await body(res)).toMatchObject({ plan: "enterprise", retentionDays: 365 });
    const [entry] = await auditRows(f.db, projectId);
    expect(entry).toMatchObject({
      action: "projects.update",
      outcome: "success",
      metadata: { changed: { plan: { from: "hobby", to: "enterprise" } } },
    });
  });

  it("refuses an empty change with 400, a member with 403 (recorded), an outsider with 403", async () => {
    const empty = await f.call("PATCH", `/v2/projects/${f.projectId}`, { body: {} });
    expect(empty.status).toBe(400);
    expect((await body(empty)).message).toMatch(/give name, plan or both/);

    const member = await f.call("PATCH", `/v2/projects/${f.projectId}`, {
      token: f.member.token,
      body: { plan: "pro" },
    });
    expect(member.status).toBe(403);
    const outsider = await f.call("PATCH", `/v2/projects/${f.projectId}`, {
      token: f.outsider.token,
      body: { plan: "pro" },
    });
    expect(outsider.status).toBe(403);

    const entries = await auditRows(f.db, f.projectId);
    expect(entries.slice(0, 3).map((e) => [e.action, e.outcome, e.actorId, e.metadata])).toEqual([
      ["projects.update", "failure", f.outsider.id, expect.objectContaining({ status: 403 })],
      ["projects.update", "failure", f.member.id, expect.objectContaining({ status: 403 })],
      ["projects.update", "failure", f.owner.id, expect.objectContaining({ status: 400 })],
    ]);
  });

  it("answers 404 for a project that does not exist", async () => {
    const res = await f.call("PATCH", "/v2/projects/prj_missing", { body: { plan: "pro" } });
    expect(res.status).toBe(404);
    expect((await body(res)).message).toBe(
      "project 'prj_missing' not found: GET /v2/projects (runlet projects) lists yours with their ids",
    );
  });

  it("says, for a project named by its name where its id goes, that it is named by its id", async () => {
    const res = await f.call("GET", "/v2/projects/default/apps");
    expect(res.status).toBe(404);
    expect((await body(res)).message).toBe(
      "project 'default' not found: a project is named by its id (prj_…), not by its name; GET /v2/projects (runlet projects) lists yours with their ids",
    );
  });
});
