// `runlet projects [list|create|update]` against a real Node control plane: its first user made by
// `runlet init` (credentials in local.json), the projects they make, and a service account.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ENV } from "../../common/consts.ts";
import { runlet as cli, type FirstUser, withFirstUser } from "./test-support.ts";

let first: FirstUser;
/** The first user's environment: RUNLET_HOME with the local.json `runlet init` wrote. */
let env: Record<string, string | undefined>;
/** The control plane's address. */
let baseUrl: string;
/** Runs the CLI with `more` over the environment (the first user's by default). */
const runlet = (args: string[], more: Record<string, string | undefined> = env) => cli(args, more);

beforeAll(async () => {
  first = await withFirstUser("projects", "first");
  ({ env, baseUrl } = first);
});

afterAll(() => first?.stop());

interface Listed {
  id: string;
  name: string;
  plan: string;
  role: string;
  current: boolean;
}

describe("runlet projects", () => {
  let first: string;
  let staging: string;

  it("lists the projects you are in, the one the CLI works in marked", async () => {
    const made = await runlet([
      "projects",
      "create",
      "--name",
      "staging",
      "--plan",
      "pro",
      "--json",
    ]);
    expect(made.code, made.stdout).toBe(0);
    staging = JSON.parse(made.stdout).id;

    const listed = await runlet(["projects", "list", "--json"]);
    expect(listed.code, listed.stdout).toBe(0);
    const projects = JSON.parse(listed.stdout).projects as Listed[];
    expect(projects.map((p) => [p.name, p.plan, p.role])).toEqual([
      [expect.any(String), "hobby", "owner"],
      ["staging", "pro", "owner"],
    ]);
    expect(projects.map((p) => p.current)).toEqual([true, false]);
    first = (projects[0] as Listed).id;

    const table = await runlet(["projects", "list"]);
    expect(table.code, table.stderr).toBe(0);
    const lines = table.stdout.split("\n");
    expect(lines[0]).toMatch(/^\s+ID\s+NAME\s+PLAN\s+ROLE\s+CREATED$/);
    expect(lines[1]).toMatch(
      new RegExp(`^\\*\\s+${first}\\s.*\\bhobby\\s+owner\\s+\\d{4}-\\d\\d-\\d\\d$`),
    );
    expect(lines[2]).toMatch(new RegExp(`^\\s+${staging}\\s+staging\\s+pro\\s+owner\\s`));

    // Working in the other project moves the mark.
    const there = await runlet(["projects", "--json"], { ...env, [ENV.project]: staging });
    expect((JSON.parse(there.stdout).projects as Listed[]).map((p) => p.current)).toEqual([
      false,
      true,
    ]);
  });

  it("lists with no subcommand, as `runlet apps` and `runlet hosts` do", async () => {
    const bare = await runlet(["projects"]);
    expect(bare.code, bare.stderr).toBe(0);
    expect(bare.stdout).toBe((await runlet(["projects", "list"])).stdout);
  });

  it("gives a service account its own project, and says when the CLI works outside yours", async () => {
    const account = await runlet(["tokens", "create", "--name", "ci", "--expires", "1d", "--json"]);
    expect(account.code, account.stdout).toBe(0);
    const { token } = JSON.parse(account.stdout) as { token: string };
    const seen = await runlet(["projects", "--json"], { ...env, [ENV.token]: token });
    expect(JSON.parse(seen.stdout).projects).toEqual([
      expect.objectContaining({ id: first, role: "member", current: true }),
    ]);
    const elsewhere = await runlet(["projects"], { ...env, [ENV.project]: "prj_someone_else" });
    expect(elsewhere.code).toBe(0);
    expect(elsewhere.stdout).not.toContain("*");
    expect(elsewhere.stderr).toContain("prj_someone_else");
  });

  it("lists a user's projects, and makes one, with only their token and the addresses set", async () => {
    // A user an operator added is handed RUNLET_TOKEN and the addresses, with no local.json:
    // `runlet projects` was refused for want of RUNLET_PROJECT, the id it would have listed.
    const made = await runlet(["users", "create", "--name", "Ben", "--expires", "1d", "--json"]);
    expect(made.code, made.stdout).toBe(0);
    const ben = {
      [ENV.home]: `${env[ENV.home]}-ben-has-none`,
      [ENV.baseUrl]: baseUrl,
      [ENV.apiUrl]: "http://127.0.0.1:9",
      [ENV.token]: (JSON.parse(made.stdout) as { token: string }).token,
      [ENV.project]: undefined,
    };
    const listed = await runlet(["projects"], ben);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toContain(first);
    expect(listed.stdout).not.toContain("*");
    expect(listed.stderr).toContain("RUNLET_PROJECT=<its id>");
    // In one project, the CLI works there without RUNLET_PROJECT (it was refused for want of it).
    const apps = await runlet(["apps", "--json"], ben);
    expect(apps.code, apps.stderr).toBe(0);
    expect(JSON.parse(apps.stdout)).toMatchObject({ apps: expect.any(Array) });
    const own = await runlet(["projects", "create", "--name", "ben-own", "--json"], ben);
    expect(own.code, own.stderr).toBe(0);
    // In two, it names them and what to set.
    const which = await runlet(["apps"], ben);
    expect(which.code).toBe(1);
    expect(which.stderr).toContain(
      `the user of RUNLET_TOKEN is in 2 projects: set RUNLET_PROJECT to the id of the one to work in (${first} (`,
    );
    const again = await runlet(["projects", "--json"], ben);
    expect((JSON.parse(again.stdout).projects as Listed[]).map((p) => p.id)).toEqual([
      first,
      JSON.parse(own.stdout).id,
    ]);
  });

  it("renames a project and changes its plan, the one the CLI works in by default", async () => {
    // Round 13: a project could be renamed over the API only.
    const renamed = await runlet(["projects", "update", staging, "--name", "staging-eu", "--json"]);
    expect(renamed.code, renamed.stderr).toBe(0);
    expect(JSON.parse(renamed.stdout)).toMatchObject({
      id: staging,
      name: "staging-eu",
      plan: "pro",
    });
    const here = await runlet(["projects", "update", "--plan", "enterprise"], {
      ...env,
      [ENV.project]: staging,
    });
    expect(here.code, here.stderr).toBe(0);
    expect(here.stdout.trim()).toBe(`Project ${staging} is now staging-eu (enterprise).`);
    const listed = JSON.parse((await runlet(["projects", "--json"])).stdout).projects as Listed[];
    expect(listed.find((p) => p.id === staging)).toMatchObject({
      name: "staging-eu",
      plan: "enterprise",
    });
    const audit = await runlet(["audit-log", "--action", "projects.update", "--json"], {
      ...env,
      [ENV.project]: staging,
    });
    expect(audit.code, audit.stderr).toBe(0);
    expect(audit.stdout).toContain('"from":"staging","to":"staging-eu"');
    const nothing = await runlet(["projects", "update", staging]);
    expect(nothing.code).toBe(1);
    expect(nothing.stderr).toContain("give --name, --plan or both");
  });

  it("deletes a project: refused while it has apps, naming them; then gone, and said so to the CLI working in it", async () => {
    const made = await runlet(["projects", "create", "--name", "scratch", "--json"]);
    expect(made.code, made.stderr).toBe(0);
    const scratch = JSON.parse(made.stdout).id as string;
    const there = { ...env, [ENV.project]: scratch };
    const deployed = await runlet(["deploy", "examples/hello", "--no-start-check"], there);
    expect(deployed.code, deployed.stderr).toBe(0);

    // A script is not asked; the server refuses while the app is there, and says what to do.
    const refused = await runlet(["projects", "delete", scratch]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(
      `deleting the project failed (409): project '${scratch}' still has an app: 'hello'. Delete it first (runlet apps delete NAME`,
    );
    expect((await runlet(["apps", "delete", "hello"], there)).code).toBe(0);

    const gone = await runlet(["projects", "delete", scratch, "--json"], there);
    expect(gone.code, gone.stderr).toBe(0);
    expect(JSON.parse(gone.stdout)).toEqual({ deleted: scratch, name: "scratch" });
    expect(gone.stderr).toContain(
      `The CLI worked in it (RUNLET_PROJECT): set RUNLET_PROJECT to another project's id`,
    );
    const listed = JSON.parse((await runlet(["projects", "--json"])).stdout).projects as Listed[];
    expect(listed.map((p) => p.id)).not.toContain(scratch);

    // Later commands in it say it was deleted, where the CLI took its id from, and what to do.
    const later = await runlet(["apps"], there);
    expect(later.code).toBe(1);
    expect(later.stderr).toContain(
      `failed (404): project ${scratch} was deleted: the CLI works in it (RUNLET_PROJECT). To work in another, set RUNLET_PROJECT to another's id (npx runlet projects lists yours; npx runlet projects create --name NAME makes one)`,
    );
    const again = await runlet(["projects", "delete", scratch]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(`project '${scratch}' was deleted`);
    // The list says so too, where it said the project was "not one of yours".
    const mine = await runlet(["projects"], there);
    expect(mine.code, mine.stderr).toBe(0);
    expect(mine.stderr).toContain(
      `The project ${scratch} was deleted: the CLI works in it (RUNLET_PROJECT). To work in another`,
    );
  });

  it("says which project to delete, and takes --yes for delete alone", async () => {
    const none = await runlet(["projects", "delete"]);
    expect(none.code).toBe(1);
    expect(none.stderr).toContain("which project? give its id");
    const yes = await runlet(["projects", "list", "--yes"]);
    expect(yes.code).toBe(1);
    expect(yes.stderr).toContain("--yes is for delete");
    const help = await runlet(["projects", "--help"]);
    expect(help.stdout).toContain("runlet projects delete ID [--yes] [--json]");
  });

  it("shows its help, and refuses what it does not do", async () => {
    const help = await runlet(["projects", "--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^Usage: runlet projects \[list\]/);
    const wrong = await runlet(["projects", "remove", "--json"]);
    expect(wrong.code).toBe(1);
    expect(JSON.parse(wrong.stdout)).toEqual({
      message: "say list, create, update or delete (not 'remove')",
    });
    const stray = await runlet(["projects", "list", "--name", "x"]);
    expect(stray.code).toBe(1);
    expect(stray.stderr).toContain("--name and --plan are for create and update");
  });
});
