// `runlet users list|add|role|remove|token|revoke` against a real Node control plane: its first
// user made by `runlet init` (an operator, credentials in local.json), then the people it adds.
import { mkdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ENV } from "../../common/consts.ts";
import { type FirstUser, runlet as inProcess, withFirstUser } from "./test-support.ts";

let dir: string;
let first: FirstUser | undefined;
let baseUrl: string;
/** The operator's environment: RUNLET_HOME with the local.json `runlet init` wrote. */
let env: Record<string, string | undefined>;

beforeAll(async () => {
  first = await withFirstUser("users", "operator");
  ({ dir, baseUrl, env } = first);
});

afterAll(() => first?.stop());

/** Runs the CLI in this process with `more` over the environment (the operator's by default). */
const runlet = (args: string[], more: Record<string, string | undefined> = env) =>
  inProcess(args, more);

const localJson = async () =>
  JSON.parse(await readFile(join(dir, "operator", "local.json"), "utf8")) as {
    projectId: string;
    token: string;
  };

/** The status of listing the apps of `projectId` with `token`. */
const apps = async (token: string, projectId: string) =>
  (
    await fetch(`${baseUrl}/v2/projects/${projectId}/apps`, {
      headers: { authorization: `Bearer ${token}` },
    })
  ).status;

describe("runlet users", () => {
  let ann: { id: string; token: string };
  let first: string;
  let second: string;

  it("lists the project's users with their token's expiry, never a token", async () => {
    const made = await runlet(["users", "create", "--name", "Ann", "--expires", "30d", "--json"]);
    expect(made.code, made.stdout).toBe(0);
    ann = JSON.parse(made.stdout);
    first = (await localJson()).projectId;
    const table = await runlet(["users", "list"]);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toMatch(/^ID\s+NAME\s+ROLE\s+OPERATOR\s+TOKEN/);
    expect(table.stdout).toMatch(/Ada\s+owner\s+yes\s+expires \d{4}-\d\d-\d\d/);
    expect(table.stdout).toMatch(new RegExp(`${ann.id}\\s+Ann\\s+member\\s+no\\s+expires`));
    const listed = await runlet(["users", "list", "--json"]);
    expect(JSON.parse(listed.stdout).users).toHaveLength(2);
    expect(listed.stdout).not.toContain(ann.token);
    expect(listed.stdout).not.toContain((await localJson()).token);
  });

  it("adds an existing user to another project, changes roles, removes them", async () => {
    const project = await runlet(["projects", "create", "--name", "second", "--json"]);
    second = JSON.parse(project.stdout).id;
    const there = { ...env, [ENV.project]: second };
    const added = await runlet(["users", "add", ann.id, "--role", "member"], there);
    expect(added.code, added.stderr).toBe(0);
    expect(added.stdout).toBe(`Added Ann (${ann.id}) as member.`);
    expect(await apps(ann.token, second)).toBe(200);

    const again = await runlet(["users", "add", ann.id, "--role", "owner", "--json"], there);
    expect(again.code).toBe(1);
    expect(JSON.parse(again.stdout)).toMatchObject({ status: 409, code: "conflict" });
    const noRole = await runlet(["users", "add", ann.id], there);
    expect(noRole.stderr).toMatch(/--role must be member or owner/);
    const noId = await runlet(["users", "remove"], there);
    expect(noId.stderr).toMatch(/give the user's id \('runlet users list' shows it\)/);

    const ada = JSON.parse((await runlet(["users", "list", "--json"], there)).stdout).users.find(
      (u: { name: string }) => u.name === "Ada",
    );
    const last = await runlet(["users", "role", ada.id, "member"], there);
    expect(last.code).toBe(1);
    expect(last.stderr).toMatch(/failed \(409\): cannot demote Ada .*last owner/);
    const up = await runlet(["users", "role", ann.id, "owner"], there);
    expect(up.stdout).toBe(`Ann (${ann.id}) is now owner.`);
    const down = await runlet(["users", "role", ann.id, "member", "--json"], there);
    expect(JSON.parse(down.stdout)).toMatchObject({ id: ann.id, role: "member" });

    const removed = await runlet(["users", "remove", ann.id], there);
    expect(removed.stdout).toBe(`Removed ${ann.id} from project ${second}.`);
    expect(await apps(ann.token, second)).toBe(403);
    expect(await apps(ann.token, first)).toBe(200);
    const log = await runlet(["audit-log", "--json"], there);
    const actions = JSON.parse(log.stdout).logs.map((e: { action: string }) => e.action);
    expect(actions.slice(0, 6)).toEqual([
      "users.remove",
      "users.set_role",
      "users.set_role",
      "users.set_role",
      "users.add",
      "users.add",
    ]);
  });

  it("renews your own token into local.json: the old one is refused at once", async () => {
    const before = await localJson();
    const renewed = await runlet(["users", "token", "--expires", "400d"]);
    expect(renewed.code, renewed.stderr).toBe(0);
    expect(renewed.stdout).toBe("");
    expect(renewed.stderr).toMatch(/You have a new token, expiring .* saved to .*local\.json/);
    const after = await localJson();
    expect(after.token).not.toBe(before.token);
    expect((await stat(join(dir, "operator", "local.json"))).mode & 0o777).toBe(0o600);
    expect(await apps(before.token, first)).toBe(401);
    expect(await apps(after.token, first)).toBe(200);
  });

  it("prints a renewed token it could not save to local.json, rather than lose it", async () => {
    const before = await localJson();
    // local.json is written through local.json.tmp: a folder there makes the write fail.
    const blocked = join(dir, "operator", "local.json.tmp");
    await mkdir(blocked);
    let renewed: Awaited<ReturnType<typeof runlet>>;
    try {
      renewed = await runlet(["users", "token", "--expires", "400d"]);
    } finally {
      await rm(blocked, { recursive: true, force: true });
    }
    expect(renewed.code, renewed.stderr).toBe(0);
    expect(renewed.stderr).toMatch(/could not be saved to .*local\.json/);
    const token = renewed.stdout.trim();
    expect(await apps(token, first)).toBe(200);
    expect(await apps(before.token, first)).toBe(401);
    // As its holder would: the new token in local.json, for the cases after this one.
    const path = join(dir, "operator", "local.json");
    await writeFile(path, JSON.stringify({ ...before, token }));
  });

  it("prints a renewed token taken from RUNLET_TOKEN, and leaves local.json alone", async () => {
    const made = await runlet(["users", "create", "--name", "Bea", "--expires", "1d", "--json"]);
    const bea = JSON.parse(made.stdout);
    const before = await localJson();
    const renewed = await runlet(["users", "token", "--expires", "5d"], {
      ...env,
      [ENV.token]: bea.token,
    });
    expect(renewed.code, renewed.stderr).toBe(0);
    expect(renewed.stderr).toMatch(/Set RUNLET_TOKEN to it wherever you used the old one/);
    expect(await apps(renewed.stdout.trim(), first)).toBe(200);
    expect(await apps(bea.token, first)).toBe(401);
    expect(await localJson()).toEqual(before);
  });

  it("issues a member a new token, and revokes it", async () => {
    const issued = await runlet(["users", "token", ann.id, "--expires", "10d"]);
    expect(issued.code, issued.stderr).toBe(0);
    expect(issued.stderr).toMatch(
      /Ann \(usr_\w+\) has a new token, .*the old one is refused at once by the management API, within 10 s by the run API/,
    );
    const token = issued.stdout.trim();
    expect(await apps(token, first)).toBe(200);
    expect(await apps(ann.token, first)).toBe(401);
    const noExpiry = await runlet(["users", "token", ann.id]);
    expect(noExpiry.stderr).toMatch(/--expires is required/);

    const revoked = await runlet(["users", "revoke", ann.id]);
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(revoked.stdout).toMatch(/^Revoked the token of usr_\w+: refused at once/);
    expect(await apps(token, first)).toBe(401);
    const list = JSON.parse((await runlet(["users", "list", "--json"])).stdout);
    expect(list.users.find((u: { id: string }) => u.id === ann.id).tokenExpiresAt).toBeNull();
    const table = await runlet(["users", "list"]);
    expect(table.stdout).toMatch(
      new RegExp(`${ann.id}\\s+Ann\\s+member\\s+no\\s+none \\(revoked\\)`),
    );
  });

  it("a member is told what they may not do", async () => {
    const made = await runlet(["users", "create", "--name", "Cy", "--expires", "1d", "--json"]);
    const cy = JSON.parse(made.stdout);
    const as = { ...env, [ENV.token]: cy.token };
    const list = await runlet(["users", "list"], as);
    expect(list.code).toBe(1);
    expect(list.stderr).toMatch(/listing users failed \(403\): only the project owner may do this/);
    const revoke = await runlet(["users", "revoke", ann.id, "--json"], as);
    expect(JSON.parse(revoke.stdout)).toMatchObject({ status: 403 });
  });
});

// docs/deploy.md: when a person leaves, revoke the service accounts they made, which
// `runlet tokens list` shows.
it("tokens list says who made each service account, after they were removed", async () => {
  const { projectId } = await localJson();
  const made = await runlet(["users", "create", "--name", "Leaver", "--expires", "30d"]);
  expect(made.code, made.stderr).toBe(0);
  const leaver = await runlet(["users", "list", "--json"]);
  const { id } = (JSON.parse(leaver.stdout).users as Array<{ id: string; name: string }>).find(
    (u) => u.name === "Leaver",
  ) as { id: string };
  expect((await runlet(["users", "role", id, "owner"])).code).toBe(0);
  const theirs = await runlet(["tokens", "create", "--name", "leavers-ci", "--expires", "7d"], {
    ...env,
    [ENV.token]: made.stdout.trim(),
    [ENV.project]: projectId,
  });
  expect(theirs.code, theirs.stderr).toBe(0);
  expect((await runlet(["users", "remove", id])).code).toBe(0);
  const table = await runlet(["tokens", "list"]);
  expect(table.code, table.stderr).toBe(0);
  expect(table.stdout).toMatch(/^ID\s+NAME\s+ROLE\s+EXPIRES\s+STATUS\s+CREATED BY/);
  // By name (it said the id alone); --json has both.
  expect(table.stdout).toMatch(/leavers-ci\s+member.*active\s+Leaver$/m);
  const listed = JSON.parse((await runlet(["tokens", "list", "--json"])).stdout);
  expect(listed.serviceAccounts).toContainEqual(
    expect.objectContaining({ name: "leavers-ci", createdBy: id, createdByName: "Leaver" }),
  );
});

// docs/deploy.md: an operator enters a project they are not in (its owner left, say), audited.
it("lets an operator list every project and add themselves to one they are not in ('me')", async () => {
  const made = await runlet(["users", "create", "--name", "Solo", "--expires", "30d"]);
  expect(made.code, made.stderr).toBe(0);
  const solo = { ...env, [ENV.token]: made.stdout.trim(), [ENV.project]: undefined };
  const own = await runlet(["projects", "create", "--name", "solo-own", "--json"], solo);
  expect(own.code, own.stderr).toBe(0);
  const theirs = JSON.parse(own.stdout).id as string;

  const mine = JSON.parse((await runlet(["projects", "--json"])).stdout).projects;
  expect(mine.map((p: { id: string }) => p.id)).not.toContain(theirs);
  const all = await runlet(["projects", "--all"]);
  expect(all.code, all.stderr).toBe(0);
  expect(all.stdout).toMatch(new RegExp(`^\\s+${theirs}\\s+solo-own\\s+hobby\\s+-\\s`, "m"));
  const refused = await runlet(["projects", "--all"], solo);
  expect(refused.code).toBe(1);
  expect(refused.stderr).toContain("only an operator of this Runlet may list every project");

  const there = { ...env, [ENV.project]: theirs };
  const joined = await runlet(["users", "add", "me", "--role", "member"], there);
  expect(joined.code, joined.stderr).toBe(0);
  expect(joined.stdout).toMatch(/^Added Ada \(usr_\w+\) as member\.$/);
  const raised = await runlet(["users", "role", "me", "owner", "--json"], there);
  expect(raised.code, raised.stderr).toBe(0);
  expect(JSON.parse(raised.stdout)).toMatchObject({ name: "Ada", role: "owner" });
  // The project's owner reads how the operator came in.
  const log = await runlet(["audit-log", "--action", "users.add", "--json"], {
    ...solo,
    [ENV.project]: theirs,
  });
  expect(JSON.parse(log.stdout).logs[0]).toMatchObject({
    outcome: "success",
    metadata: { name: "Ada", role: "member", asOperator: true },
  });
  // 'me' is a user: a service account's token is told so before anything is sent.
  const account = await runlet([
    "tokens",
    "create",
    "--name",
    "me-ci",
    "--expires",
    "1d",
    "--json",
  ]);
  const ci = { ...env, [ENV.token]: JSON.parse(account.stdout).token };
  const notMe = await runlet(["users", "add", "me", "--role", "member"], ci);
  expect(notMe.code).toBe(1);
  expect(notMe.stderr).toContain("this token is a service account's");
});

it("prints --help, and names the actions when given another", async () => {
  const help = await runlet(["users", "--help"], {});
  expect(help.code).toBe(0);
  expect(help.stdout).toMatch(/^Usage: runlet users list/);
  for (const action of ["list", "add", "role", "remove", "token", "revoke"]) {
    expect(help.stdout).toContain(`runlet users ${action}`);
  }
  const other = await runlet(["users", "delete", "usr_1"], {});
  expect(other.code).toBe(1);
  expect(other.stderr).toMatch(
    /say list, create, add, role, remove, token or revoke \(not 'delete'\)/,
  );
});

// An owner with more of each than a page of the API's lists (50 by default) or of the
// dashboard's: `runlet users list`, `tokens list` and `secrets list` still print every one.
it("lists all of 60 users, service accounts and secrets", async () => {
  const { projectId, token } = await localJson();
  const send = (method: string, path: string, body: unknown) =>
    fetch(`${baseUrl}/v2/projects/${projectId}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
  const expiresAt = new Date(Date.now() + 86_400_000).toISOString();
  const n = 60;
  for (let i = 0; i < n; i += 20) {
    const made = await Promise.all(
      Array.from({ length: 20 }, (_, j) => [
        send("POST", "/users", { name: `many-${i + j}`, expiresAt }),
        send("POST", "/service-accounts", { name: `bot-${i + j}`, expiresAt }),
        send("PUT", `/secrets/MANY_${i + j}`, { value: "x" }),
      ]).flat(),
    );
    expect(made.map((r) => r.status).filter((s) => s >= 300)).toEqual([]);
  }
  const count = async (args: string[], field: string, prefix: string) => {
    const res = await runlet([...args, "--json"]);
    expect(res.code, res.stderr).toBe(0);
    const rows = JSON.parse(res.stdout)[field] as Array<{ name: string }>;
    return new Set(rows.map((r) => r.name).filter((name) => name.startsWith(prefix))).size;
  };
  expect(await count(["users", "list"], "users", "many-")).toBe(n);
  expect(await count(["tokens", "list"], "serviceAccounts", "bot-")).toBe(n);
  expect(await count(["secrets", "list"], "secrets", "MANY_")).toBe(n);
  const table = await runlet(["secrets", "list"]);
  expect(table.stdout.split("\n").filter((line) => line.startsWith("MANY_"))).toHaveLength(n);
});
