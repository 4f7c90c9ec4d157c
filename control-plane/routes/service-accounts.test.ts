import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { issueToken } from "../auth/tokens.ts";
import { serviceAccounts, tokens } from "../db/schema.ts";
import { auditRows } from "../testing/audit-rows.ts";
import { libsqlFixture } from "../testing/libsql.ts";

let f: Awaited<ReturnType<typeof libsqlFixture>>;

beforeAll(async () => {
  f = await libsqlFixture();
});

afterAll(() => f?.cleanup());

type Body = Record<string, unknown> & { message?: string; token?: string; id?: string };
const body = async (res: Response) => (await res.json()) as Body;
const inDays = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString();
const accountsPath = () => `/v2/projects/${f.projectId}/service-accounts`;

/** Each account its own name: a live account's name is taken in its project. */
let made = 0;

async function createAccount(payload: Record<string, unknown> = {}) {
  const res = await f.call("POST", accountsPath(), {
    body: { name: `ci-${++made}`, expiresAt: inDays(30), ...payload },
  });
  expect(res.status).toBe(201);
  return body(res);
}

describe("service accounts", () => {
  it("creates an account whose token is shown once and works on the management API", async () => {
    const created = await createAccount({ name: "deployer", role: "owner" });
    expect(created).toMatchObject({ name: "deployer", role: "owner" });
    expect(created.id).toMatch(/^sa_/);
    expect(String(created.token).split(".")).toHaveLength(3);

    // The token is a JWT of this project; with role owner it may read the audit log.
    const log = await f.call("GET", `/v2/projects/${f.projectId}/audit-log`, {
      token: created.token,
    });
    expect(log.status).toBe(200);
    const { logs } = (await log.json()) as { logs: Body[] };
    expect(logs[0]).toMatchObject({
      action: "service_accounts.create",
      outcome: "success",
      actor: { type: "user", id: f.owner.id },
      target: { type: "service_account", id: created.id },
    });

    // The list never shows tokens; the database holds only the token's id.
    const listed = await body(await f.call("GET", accountsPath()));
    expect(JSON.stringify(listed)).not.toContain(String(created.token));
    expect(listed.serviceAccounts).toContainEqual(
      expect.objectContaining({
        id: created.id,
        role: "owner",
        revokedAt: null,
        createdBy: f.owner.id,
        createdByName: f.owner.name,
      }),
    );
    // One made with an owner account's token names that account.
    const made = await f.call("POST", accountsPath(), {
      token: String(created.token),
      body: { name: "nightly", expiresAt: new Date(Date.now() + 86_400_000).toISOString() },
    });
    expect(made.status).toBe(201);
    const again = await body(await f.call("GET", accountsPath()));
    expect(again.serviceAccounts).toContainEqual(
      expect.objectContaining({
        name: "nightly",
        createdBy: created.id,
        createdByName: "deployer",
      }),
    );
    const [row] = await f.db
      .select()
      .from(tokens)
      .where(eq(tokens.subject, String(created.id)));
    expect(JSON.stringify(row)).not.toContain(String(created.token));
  });

  it("takes an expiresAt whose T and Z are written t and z (RFC 3339 §5.6)", async () => {
    const expiresAt = "2027-01-31t00:00:00.5z";
    const at = Date.parse("2027-01-31T00:00:00.5Z");
    if (at > Date.now() + 3650 * 86_400_000) throw new Error("the case's time is too far ahead");
    const created = await createAccount({ expiresAt });
    expect(created.expiresAt).toBe(new Date(at).toISOString());
  });

  it("defaults to the member role, which may list apps but not read the audit log", async () => {
    const created = await createAccount();
    expect(created.role).toBe("member");
    const apps = await f.call("GET", `/v2/projects/${f.projectId}/apps`, { token: created.token });
    expect(apps.status).toBe(200);
    const log = await f.call("GET", `/v2/projects/${f.projectId}/audit-log`, {
      token: created.token,
    });
    expect(log.status).toBe(403);
    // The refusal is on the record, attributed to the account.
    const [entry] = await auditRows(f.db, f.projectId);
    expect(entry).toMatchObject({
      action: "audit_log.read",
      outcome: "failure",
      actorType: "service_account",
      actorId: created.id,
      actorName: created.name,
    });
  });

  it("makes a caller account, which reads what the run API asks with it and nothing more", async () => {
    const created = await createAccount({ name: "public-caller", role: "caller" });
    expect(created.role).toBe("caller");
    const as = (method: string, path: string, extra: Record<string, unknown> = {}) =>
      f.call(method, `/v2/projects/${f.projectId}${path}`, { token: created.token, ...extra });
    // What the run API reads with a caller's token: the project, an app, a run.
    expect((await as("GET", "")).status).toBe(200);
    expect(await body(await as("GET", ""))).toMatchObject({ role: "caller" });
    expect((await as("GET", "/apps/nope")).status).toBe(404); // past the role: no such app
    expect((await as("GET", "/runs/run_01m8aaaaaaaaaaaaaaaaaaaaaa")).status).toBe(404);
    // Nothing else: no deploy (and so no secrets through its code), no lists, no dashboard.
    const refused = [
      await as("GET", "/apps"),
      await as("GET", "/runs"),
      await as("GET", "/secrets"),
      await as("POST", "/apps", { body: { files: [] } }),
      await as("POST", "/dashboard-links", { body: {} }),
    ];
    expect(refused.map((r) => r.status)).toEqual([403, 403, 403, 403, 403]);
    expect((await body(refused[3] as Response)).message).toBe(
      "this service account's role is caller: it calls the project's apps (the run API) and nothing more",
    );
    const role = await f.call("POST", accountsPath(), {
      body: { name: "x", expiresAt: inDays(1), role: "boss" },
    });
    expect((await body(role)).message).toMatch(/must be owner, member or caller/);
  });

  it("keeps an account's token out of other projects with 403", async () => {
    const created = await createAccount({ role: "owner" });
    const res = await f.call("GET", `/v2/projects/${f.outsiderProjectId}/apps`, {
      token: created.token,
    });
    expect(res.status).toBe(403);
    const newProject = await f.call("POST", "/v2/projects", {
      token: created.token,
      body: { name: "escape" },
    });
    expect(newProject.status).toBe(403);
  });

  it("revokes at once: the next request with the token is 401", async () => {
    const created = await createAccount();
    const apps = `/v2/projects/${f.projectId}/apps`;
    expect((await f.call("GET", apps, { token: created.token })).status).toBe(200);

    const revoked = await f.call("DELETE", `${accountsPath()}/${created.id}`);
    expect(revoked.status).toBe(204);
    const after = await f.call("GET", apps, { token: created.token });
    expect(after.status).toBe(401);
    expect((await body(after)).message).toBe("token has been revoked");

    const listed = await body(await f.call("GET", accountsPath()));
    const account = (listed.serviceAccounts as Body[]).find((a) => a.id === created.id);
    expect(account?.revokedAt).toEqual(expect.any(String));
    const [entry] = await auditRows(f.db, f.projectId);
    expect(entry).toMatchObject({
      action: "service_accounts.revoke",
      outcome: "success",
      targetId: created.id,
    });

    // Revoking again is harmless and says so on the record.
    expect((await f.call("DELETE", `${accountsPath()}/${created.id}`)).status).toBe(204);
    const [again] = await auditRows(f.db, f.projectId);
    expect(again?.metadata).toMatchObject({ alreadyRevoked: true });
  });

  it("refuses a second active account of a name with 409 naming the first; revoking it frees the name", async () => {
    // Two of one name were made, and the list, the dashboard and the audit log told them apart
    // by their ids alone.
    const first = await createAccount({ name: "deploy-bot" });
    const before = await auditRows(f.db, f.projectId);
    const tokensBefore = (await f.db.select().from(tokens)).length;
    const again = await f.call("POST", accountsPath(), {
      body: { name: "deploy-bot", expiresAt: inDays(5), role: "owner" },
    });
    expect(again.status).toBe(409);
    expect(await body(again)).toEqual({
      code: "conflict",
      message: `a service account named 'deploy-bot' is active in this project already (${first.id}): revoke it first (runlet tokens revoke ${first.id}, or the dashboard's API keys page), or pick another name`,
    });
    // Nothing was made: no account, no token, and the refusal alone on the record.
    const named = await f.db
      .select()
      .from(serviceAccounts)
      .where(eq(serviceAccounts.name, "deploy-bot"));
    expect(named.map((a) => a.id)).toEqual([first.id]);
    expect((await f.db.select().from(tokens)).length).toBe(tokensBefore);
    const [refused] = await auditRows(f.db, f.projectId);
    expect((await auditRows(f.db, f.projectId)).length).toBe(before.length + 1);
    expect(refused).toMatchObject({
      action: "service_accounts.create",
      outcome: "failure",
      targetId: "(new)",
    });
    // Another project may have one of the name.
    const elsewhere = await f.call("POST", `/v2/projects/${f.outsiderProjectId}/service-accounts`, {
      token: f.outsider.token,
      body: { name: "deploy-bot", expiresAt: inDays(5) },
    });
    expect(elsewhere.status).toBe(201);
    // Revoked, its name is free again.
    expect((await f.call("DELETE", `${accountsPath()}/${first.id}`)).status).toBe(204);
    const second = await createAccount({ name: "deploy-bot" });
    expect(second.id).not.toBe(first.id);
  });

  it("makes one account of two creates of a name at once; an expired account frees its name", async () => {
    const tokensBefore = (await f.db.select().from(tokens)).length;
    const answers = await Promise.all(
      [1, 2].map(() =>
        f.call("POST", accountsPath(), { body: { name: "twin", expiresAt: inDays(5) } }),
      ),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([201, 409]);
    const twins = await f.db.select().from(serviceAccounts).where(eq(serviceAccounts.name, "twin"));
    expect(twins).toHaveLength(1);
    // No token left behind by the refused one.
    expect((await f.db.select().from(tokens)).length).toBe(tokensBefore + 1);
    await f.db
      .update(serviceAccounts)
      .set({ expiresAt: Date.now() - 1000 })
      .where(eq(serviceAccounts.id, twins[0]?.id as string));
    expect((await createAccount({ name: "twin" })).name).toBe("twin");
  });

  it("refuses an expired account token with 401", async () => {
    const created = await createAccount();
    const [account] = await f.db
      .select()
      .from(serviceAccounts)
      .where(eq(serviceAccounts.id, String(created.id)));
    const { token } = await issueToken(f.db, f.deps.keys, {
      subject: String(account?.id),
      projectId: f.projectId,
      expiresAt: new Date(Date.now() - 1000),
    });
    const res = await f.call("GET", `/v2/projects/${f.projectId}/apps`, { token });
    expect(res.status).toBe(401);
    expect((await body(res)).message).toBe("token has expired");
  });

  it.each([
    ["no name", { expiresAt: inDays(1) }, /^name: /],
    ["no expiry", { name: "x" }, /^expiresAt: /],
    [
      "a date without offset",
      { name: "x", expiresAt: "2030-01-01T00:00:00" },
      /^expiresAt: must be an RFC 3339/,
    ],
    ["a date only", { name: "x", expiresAt: "2030-01-01" }, /^expiresAt: must be an RFC 3339/],
    ["a past expiry", { name: "x", expiresAt: inDays(-1) }, /^expiresAt: must be in the future/],
    [
      "an expiry beyond ten years",
      { name: "x", expiresAt: inDays(3700) },
      /^expiresAt: must be within 3650 days/,
    ],
    [
      "an unknown role",
      { name: "x", expiresAt: inDays(1), role: "admin" },
      /^role: must be owner, member or caller/,
    ],
    ["an unknown field", { name: "x", expiresAt: inDays(1), scopes: [] }, /unknown field 'scopes'/],
    [
      "a name that reorders its text (U+202E)",
      { name: "bot \u202e gnp.exe", expiresAt: inDays(1) },
      /^name: must not contain marks that change the direction of text/,
    ],
    [
      "a name with half a surrogate pair (stored as U+FFFD, not as sent)",
      { name: "bot \udc00", expiresAt: inDays(1) },
      /^name: holds half of a UTF-16 surrogate pair on its own/,
    ],
  ])("refuses %s with 400, writing nothing but the failure entry", async (_, payload, message) => {
    const before = (await f.db.select().from(serviceAccounts)).length;
    const res = await f.call("POST", accountsPath(), { body: payload });
    expect(res.status).toBe(400);
    expect((await body(res)).message).toMatch(message);
    expect((await f.db.select().from(serviceAccounts)).length).toBe(before);
    const [entry] = await auditRows(f.db, f.projectId);
    expect(entry).toMatchObject({ action: "service_accounts.create", outcome: "failure" });
  });

  it("lets only owners manage accounts: members get 403, strangers 403, nobody 401", async () => {
    const payload = { name: "x", expiresAt: inDays(1), role: "owner" };
    const asMember = await f.call("POST", accountsPath(), { token: f.member.token, body: payload });
    expect(asMember.status).toBe(403);
    expect((await f.call("GET", accountsPath(), { token: f.member.token })).status).toBe(403);
    expect((await f.call("GET", accountsPath(), { token: f.outsider.token })).status).toBe(403);
    expect((await f.call("GET", accountsPath(), { token: null })).status).toBe(401);
    expect((await f.call("DELETE", `${accountsPath()}/sa_nope`)).status).toBe(404);
    const other = await createAccount();
    const fromOutside = await f.call(
      "DELETE",
      `/v2/projects/${f.outsiderProjectId}/service-accounts/${other.id}`,
      { token: f.outsider.token },
    );
    expect(fromOutside.status).toBe(404);
  });
});
