/**
 * What every management route of projects, service accounts and secrets shares: who is refused
 * (401, 403), how each action lands in the audit log, and that a failing batch leaves nothing
 * half-written — not even an unaudited secret read.
 */
import { eq, sql } from "drizzle-orm";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { AUDIT_ACTION_CODES, type AuditAction, OUTCOME_CODES } from "../audit/actions.ts";
import { issueToken } from "../auth/tokens.ts";
import { auditLog, projects, secrets, serviceAccounts, tokens } from "../db/schema.ts";
import { libsqlFixture } from "../testing/libsql.ts";

let f: Awaited<ReturnType<typeof libsqlFixture>>;

beforeAll(async () => {
  f = await libsqlFixture();
});

afterAll(() => f?.cleanup());

afterEach(() => vi.restoreAllMocks());

type Body = Record<string, unknown> & { message?: string; token?: string; id?: string };
const body = async (res: Response) => (await res.json()) as Body;
const inDays = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString();
/** The entry a request left, found by its `X-Request-Id` (entries of one millisecond may tie). */
async function entryOf(res: Response) {
  const requestId = res.headers.get("x-request-id") ?? "";
  const rows = await f.db.select().from(auditLog).where(eq(auditLog.requestId, requestId));
  expect(rows.length).toBeLessThanOrEqual(1);
  return rows[0];
}
const countRows = async (table: typeof auditLog | typeof serviceAccounts | typeof tokens) =>
  (await f.db.select().from(table)).length;

interface Endpoint {
  label: string;
  method: string;
  path: (projectId: string) => string;
  body?: unknown;
  /** The action a known caller's refusal is recorded as; none for the unaudited list. */
  action?: AuditAction;
}

/** Every route of this slice that lives under a project, with a valid request for it. */
const PROJECT_ROUTES: Endpoint[] = [
  {
    label: "PATCH project",
    method: "PATCH",
    path: (p) => `/v2/projects/${p}`,
    body: { plan: "pro" },
    action: "projects.update",
  },
  {
    label: "create service account",
    method: "POST",
    path: (p) => `/v2/projects/${p}/service-accounts`,
    body: { name: "ci", expiresAt: inDays(30), role: "owner" },
    action: "service_accounts.create",
  },
  {
    label: "list service accounts",
    method: "GET",
    path: (p) => `/v2/projects/${p}/service-accounts`,
  },
  {
    label: "revoke service account",
    method: "DELETE",
    path: (p) => `/v2/projects/${p}/service-accounts/sa_unknown`,
    action: "service_accounts.revoke",
  },
  {
    label: "write secret",
    method: "PUT",
    path: (p) => `/v2/projects/${p}/secrets/API_KEY`,
    body: { value: "v" },
    action: "secrets.write",
  },
  {
    label: "read secret",
    method: "GET",
    path: (p) => `/v2/projects/${p}/secrets/API_KEY`,
    action: "secrets.read",
  },
];

const ALL_ROUTES: Endpoint[] = [
  { label: "create project", method: "POST", path: () => "/v2/projects", body: { name: "x" } },
  ...PROJECT_ROUTES,
];

/** Each account its own name: a live account's name is taken in its project. */
let made = 0;

async function createAccount(token: string, projectId: string, role = "owner") {
  const res = await f.call("POST", `/v2/projects/${projectId}/service-accounts`, {
    token,
    body: { name: `sa-${role}-${++made}`, expiresAt: inDays(30), role },
  });
  expect(res.status).toBe(201);
  return body(res) as Promise<Body & { id: string; token: string }>;
}

describe("401: the caller is not known", () => {
  const cases: [string, () => Promise<Record<string, string>>, RegExp][] = [
    ["a missing header", async () => ({}), /^missing Authorization header$/],
    [
      "another scheme",
      async () => ({ authorization: "Basic dXNlcjpwYXNz" }),
      /must be 'Bearer <token>'/,
    ],
    ["garbage", async () => ({ authorization: "Bearer garbage" }), /^token is not a JWT$/],
    [
      "a revoked service-account token",
      async () => {
        const sa = await createAccount(f.owner.token, f.projectId);
        const del = await f.call("DELETE", `/v2/projects/${f.projectId}/service-accounts/${sa.id}`);
        expect(del.status).toBe(204);
        return { authorization: `Bearer ${sa.token}` };
      },
      /^token has been revoked$/,
    ],
    [
      "an expired user token",
      async () => {
        const { token } = await issueToken(f.db, f.deps.keys, {
          subject: f.owner.id,
          expiresAt: new Date(Date.now() - 1000),
        });
        return { authorization: `Bearer ${token}` };
      },
      /^token has expired$/,
    ],
  ];

  it.each(cases)("%s: every route answers 401 and writes nothing", async (_, header, message) => {
    const headers = await header();
    const before = await Promise.all([
      countRows(auditLog),
      countRows(serviceAccounts),
      f.db.select().from(projects),
    ]);
    for (const route of ALL_ROUTES) {
      const res = await f.call(route.method, route.path(f.projectId), {
        token: null,
        headers,
        body: route.body,
      });
      expect(res.status, route.label).toBe(401);
      const answer = await body(res);
      expect(answer.message, route.label).toMatch(message);
      expect(answer.code).toBe("unauthorized");
    }
    const after = await Promise.all([
      countRows(auditLog),
      countRows(serviceAccounts),
      f.db.select().from(projects),
    ]);
    expect(after[0]).toBe(before[0]);
    expect(after[1]).toBe(before[1]);
    expect(after[2]).toHaveLength(before[2].length);
  });
});

describe("403: known, but not allowed", () => {
  it.each(PROJECT_ROUTES)(
    "$label: members, outsiders and foreign accounts are refused, on the record",
    async (route) => {
      const foreign = await createAccount(f.outsider.token, f.outsiderProjectId);
      const callers = [
        { who: "member", token: f.member.token, actor: ["user", f.member.id, f.member.name] },
        {
          who: "outsider",
          token: f.outsider.token,
          actor: ["user", f.outsider.id, f.outsider.name],
        },
        {
          who: "owner account of another project",
          token: foreign.token,
          actor: ["service_account", foreign.id, foreign.name],
        },
      ];
      const accounts = await countRows(serviceAccounts);
      for (const caller of callers) {
        const res = await f.call(route.method, route.path(f.projectId), {
          token: caller.token,
          body: route.body,
        });
        expect(res.status, `${route.label} as ${caller.who}`).toBe(403);
        expect((await body(res)).code).toBe("forbidden");
        const entry = await entryOf(res);
        if (!route.action) {
          expect(entry).toBeUndefined();
          continue;
        }
        expect(entry, `${route.label} as ${caller.who}`).toMatchObject({
          action: route.action,
          outcome: "failure",
          actorType: caller.actor[0],
          actorId: caller.actor[1],
          actorName: caller.actor[2],
          metadata: { status: 403 },
        });
      }
      expect(await countRows(serviceAccounts)).toBe(accounts);
      const [project] = await f.db.select().from(projects).where(eq(projects.id, f.projectId));
      expect(project?.plan).toBe("hobby");
    },
  );

  it("a service account may not create a project; the attempt is on its own project's record", async () => {
    const sa = await createAccount(f.owner.token, f.projectId);
    const count = (await f.db.select().from(projects)).length;
    const res = await f.call("POST", "/v2/projects", { token: sa.token, body: { name: "escape" } });
    expect(res.status).toBe(403);
    expect((await body(res)).message).toMatch(/belongs to one project/);
    expect(await f.db.select().from(projects)).toHaveLength(count);
    expect(await entryOf(res)).toMatchObject({
      projectId: f.projectId,
      action: "projects.create",
      outcome: "failure",
      actorType: "service_account",
      actorId: sa.id,
      metadata: { status: 403 },
    });
  });

  it("404 for a project that does not exist, before any role check", async () => {
    for (const route of PROJECT_ROUTES) {
      const res = await f.call(route.method, route.path("prj_missing"), { body: route.body });
      expect(res.status, route.label).toBe(404);
    }
  });
});

describe("the audit trail of each action", () => {
  it("names the actor {type, id, name}, the target and the outcome, as the API lists it", async () => {
    const projectId = await f.addProject();
    const base = `/v2/projects/${projectId}`;
    const sa = await createAccount(f.owner.token, projectId);
    const steps: [string, string, unknown, string | undefined][] = [
      ["PATCH", base, { name: "renamed" }, undefined],
      ["PUT", `${base}/secrets/DB_URL`, { value: "postgres://x" }, undefined],
      ["GET", `${base}/secrets/DB_URL`, undefined, undefined],
      // The account acts too: its entries name it, not its creator.
      ["PUT", `${base}/secrets/BY_ACCOUNT`, { value: "y" }, sa.token],
      ["DELETE", `${base}/service-accounts/${sa.id}`, undefined, undefined],
    ];
    for (const [method, path, payload, token] of steps) {
      const res = await f.call(method, path, { body: payload, token: token ?? f.owner.token });
      expect(res.status, `${method} ${path}`).toBeLessThan(300);
    }
    const res = await f.call("GET", `${base}/audit-log`);
    const { logs } = (await res.json()) as { logs: Body[] };
    const owner = { type: "user", id: f.owner.id, name: f.owner.name };
    // Entries of one millisecond may tie in order, so compare them as a set.
    const trail = logs.map((l) => [l.action, l.outcome, l.actor, l.target]);
    expect(trail).toHaveLength(6);
    expect(trail).toEqual(
      expect.arrayContaining([
        ["service_accounts.revoke", "success", owner, { type: "service_account", id: sa.id }],
        [
          "secrets.write",
          "success",
          { type: "service_account", id: sa.id, name: sa.name },
          { type: "secret", id: "BY_ACCOUNT" },
        ],
        ["secrets.read", "success", owner, { type: "secret", id: "DB_URL" }],
        ["secrets.write", "success", owner, { type: "secret", id: "DB_URL" }],
        ["projects.update", "success", owner, { type: "project", id: projectId }],
        ["service_accounts.create", "success", owner, { type: "service_account", id: sa.id }],
      ]),
    );
    for (const entry of logs) {
      expect(entry).toMatchObject({
        requestId: expect.stringMatching(/^req_/),
        ip: "203.0.113.7",
        userAgent: "runlet-tests",
      });
    }
    const update = logs.find((l) => l.action === "projects.update");
    expect(update?.metadata).toEqual({
      changed: { name: { from: expect.any(String), to: "renamed" } },
    });
  });
});

describe("a failing batch leaves nothing half-written", () => {
  /** Makes the database refuse the success entries of one action, as an outage would. */
  async function breakAuditOf(action: AuditAction) {
    await f.db.run(
      sql.raw(`CREATE TRIGGER test_audit_down BEFORE INSERT ON audit_log
        WHEN NEW.action = ${AUDIT_ACTION_CODES[action]} AND NEW.outcome = ${OUTCOME_CODES.success}
        BEGIN SELECT RAISE(ABORT, 'audit store unavailable'); END`),
    );
  }

  const logged: unknown[] = [];

  afterEach(async () => {
    await f.db.run(sql.raw("DROP TRIGGER IF EXISTS test_audit_down"));
    logged.length = 0;
  });

  function captureConsole() {
    for (const method of ["log", "error", "warn", "info"] as const) {
      vi.spyOn(console, method).mockImplementation((...args) => logged.push(...args));
    }
  }

  /** The failed request is still on the record, as a failure with the status it got. */
  async function expectFailureEntry(res: Response, projectId: string, action: AuditAction) {
    expect(await entryOf(res)).toMatchObject({
      projectId,
      action,
      outcome: "failure",
      metadata: { status: 500, error: "internal error" },
    });
  }

  it("creating a service account: no account, no token row", async () => {
    captureConsole();
    await breakAuditOf("service_accounts.create");
    const [accounts, tokenRows] = [await countRows(serviceAccounts), await countRows(tokens)];
    const res = await f.call("POST", `/v2/projects/${f.projectId}/service-accounts`, {
      body: { name: "half", expiresAt: inDays(1) },
    });
    expect(res.status).toBe(500);
    const answer = await body(res);
    expect(answer).toEqual({ message: "internal error", code: "internal" });
    expect(await countRows(serviceAccounts)).toBe(accounts);
    expect(await countRows(tokens)).toBe(tokenRows);
    await expectFailureEntry(res, f.projectId, "service_accounts.create");
  });

  it("revoking a service account: its token keeps working", async () => {
    const sa = await createAccount(f.owner.token, f.projectId, "member");
    captureConsole();
    await breakAuditOf("service_accounts.revoke");
    const res = await f.call("DELETE", `/v2/projects/${f.projectId}/service-accounts/${sa.id}`);
    expect(res.status).toBe(500);
    const [account] = await f.db
      .select()
      .from(serviceAccounts)
      .where(eq(serviceAccounts.id, sa.id));
    expect(account?.revokedAt).toBeNull();
    const apps = await f.call("GET", `/v2/projects/${f.projectId}/apps`, { token: sa.token });
    expect(apps.status).toBe(200);
    await expectFailureEntry(res, f.projectId, "service_accounts.revoke");
  });

  it("creating and updating a project: no project, no change", async () => {
    captureConsole();
    await breakAuditOf("projects.create");
    const count = (await f.db.select().from(projects)).length;
    const created = await f.call("POST", "/v2/projects", { body: { name: "half" } });
    expect(created.status).toBe(500);
    expect(await f.db.select().from(projects)).toHaveLength(count);
    await f.db.run(sql.raw("DROP TRIGGER test_audit_down"));

    await breakAuditOf("projects.update");
    const updated = await f.call("PATCH", `/v2/projects/${f.projectId}`, { body: { plan: "pro" } });
    expect(updated.status).toBe(500);
    const [project] = await f.db.select().from(projects).where(eq(projects.id, f.projectId));
    expect(project?.plan).toBe("hobby");
    await expectFailureEntry(updated, f.projectId, "projects.update");
  });

  it("writing a secret: nothing stored, and the value printed nowhere", async () => {
    captureConsole();
    const value = "half-written-value-8d2e";
    await breakAuditOf("secrets.write");
    const res = await f.call("PUT", `/v2/projects/${f.projectId}/secrets/HALF`, {
      body: { value },
    });
    expect(res.status).toBe(500);
    expect(await f.db.select().from(secrets).where(eq(secrets.name, "HALF"))).toHaveLength(0);
    await expectFailureEntry(res, f.projectId, "secrets.write");
    expect(JSON.stringify(logged)).not.toContain(value);
    expect(JSON.stringify(await f.db.select().from(auditLog))).not.toContain(value);
  });

  it("reading a secret: when the read cannot be recorded, the value is not returned", async () => {
    const value = "unaudited-read-3b7a";
    const path = `/v2/projects/${f.projectId}/secrets/WATCHED`;
    expect((await f.call("PUT", path, { body: { value } })).status).toBe(204);
    captureConsole();
    await breakAuditOf("secrets.read");
    const res = await f.call("GET", path);
    expect(res.status).toBe(500);
    expect(await res.text()).not.toContain(value);
    await expectFailureEntry(res, f.projectId, "secrets.read");
    expect(JSON.stringify(logged)).not.toContain(value);
    expect(JSON.stringify(await f.db.select().from(auditLog))).not.toContain(value);
  });
});
