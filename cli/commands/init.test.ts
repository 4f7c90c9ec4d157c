// `runlet init` against a real Node control plane for others (RUNLET_BOOTSTRAP_TOKEN set, its
// database empty), then `runlet projects create` and `runlet users create` with what it saved.
import { mkdtemp, readdir, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ENV } from "../../common/consts.ts";
import { runlet, startControlPlane, type TestControlPlane } from "./test-support.ts";

const BOOTSTRAP = "bootstrap-token-for-the-cli-test-0123456789";
const INTERNAL = "internal-token-for-the-cli-test-0123456789";

let dir: string;
let controlPlane: TestControlPlane | undefined;
let baseUrl: string;
const serverOutput = () => controlPlane?.output() ?? "";

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "runlet-init-"));
  controlPlane = await startControlPlane(dir, { internal: INTERNAL, bootstrap: BOOTSTRAP });
  baseUrl = controlPlane.baseUrl;
});

afterAll(async () => {
  controlPlane?.server.kill("SIGTERM");
  await rm(dir, { recursive: true, force: true });
});

describe("runlet init", () => {
  const home = () => join(dir, "operator");
  const init = (more: string[] = [], env: Record<string, string | undefined> = {}) =>
    runlet(["init", "--control-plane", `${baseUrl}/`, "--name", "Ada", ...more], {
      [ENV.home]: home(),
      [ENV.bootstrapToken]: BOOTSTRAP,
      [ENV.token]: undefined,
      [ENV.project]: undefined,
      [ENV.baseUrl]: undefined,
      [ENV.apiUrl]: undefined,
      ...env,
    });

  it("the control plane made no user of its own: no local.json, no host token", async () => {
    expect(await readdir(join(dir, "control-plane"))).not.toContain("local.json");
    expect(await readdir(join(dir, "control-plane"))).not.toContain("host-token");
    expect(serverOutput()).toMatch(/makes no local owner/);
  });

  it("says what is missing or wrong before claiming anything", async () => {
    const unset = await init(["--json"], { [ENV.bootstrapToken]: undefined });
    expect(unset.code).toBe(1);
    expect(JSON.parse(unset.stdout).message).toMatch(/set RUNLET_BOOTSTRAP_TOKEN/);
    const clear = await runlet(
      ["init", "--control-plane", "http://cp.example.com", "--name", "Ada"],
      { [ENV.bootstrapToken]: BOOTSTRAP },
    );
    expect(clear.code).toBe(1);
    expect(clear.stderr).toMatch(/plain HTTP.*https:\/\//);
    const noName = await runlet(["init", "--control-plane", baseUrl], {});
    expect(noName.stderr).toMatch(/--name is required/);
    const wrong = await init(["--json"], { [ENV.bootstrapToken]: INTERNAL });
    expect(wrong.code).toBe(1);
    expect(JSON.parse(wrong.stdout)).toMatchObject({
      status: 401,
      message: expect.stringMatching(/not this control plane's bootstrap token/),
    });
    await expect(stat(join(home(), "local.json"))).rejects.toThrow(/ENOENT/);
  });

  it("makes the first user and writes local.json (0600), printing no token", async () => {
    const made = await init(["--project", "acme", "--json"]);
    expect(made.code, made.stdout + made.stderr).toBe(0);
    const summary = JSON.parse(made.stdout);
    expect(summary).toMatchObject({
      user: { name: "Ada", operator: true },
      project: { name: "acme" },
      baseUrl,
      apiUrl: "https://api.example.com",
      credentials: join(home(), "local.json"),
    });
    const file = join(home(), "local.json");
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    const local = JSON.parse(await readFile(file, "utf8"));
    expect(local).toEqual({
      baseUrl,
      apiUrl: "https://api.example.com",
      projectId: summary.project.id,
      token: expect.any(String),
    });
    expect(made.stdout + made.stderr).not.toContain(local.token);
    expect(made.stderr).toMatch(/Remove it/);
    expect(serverOutput()).not.toContain(BOOTSTRAP);
    expect(serverOutput()).not.toContain(local.token);
  });

  it("is refused once made: 409 elsewhere, and never over an existing local.json", async () => {
    const elsewhere = await init(["--json"], { [ENV.home]: join(dir, "another") });
    expect(elsewhere.code).toBe(1);
    expect(JSON.parse(elsewhere.stdout)).toMatchObject({ status: 409, code: "conflict" });
    const before = await readFile(join(home(), "local.json"), "utf8");
    const here = await init();
    expect(here.code).toBe(1);
    expect(here.stderr).toMatch(/already holds credentials, and is not replaced/);
    expect(await readFile(join(home(), "local.json"), "utf8")).toBe(before);
  });

  it("leaves credentials the other commands use: projects, users, hosts", async () => {
    const env = { [ENV.home]: home(), [ENV.token]: undefined, [ENV.project]: undefined };
    const hosts = await runlet(["hosts", "--json"], env);
    expect(hosts.code, hosts.stdout).toBe(0);
    const project = await runlet(["projects", "create", "--name", "second", "--json"], env);
    expect(project.code, project.stdout).toBe(0);
    expect(JSON.parse(project.stdout)).toMatchObject({ name: "second", plan: "hobby" });
    const ann = await runlet(["users", "create", "--name", "Ann", "--expires", "30d"], env);
    expect(ann.code, ann.stderr).toBe(0);
    expect(ann.stderr).toMatch(/Added Ann \(usr_\w+, member\)/);
    const token = ann.stdout.trim();
    const apps = await runlet(["apps", "--json"], { ...env, [ENV.token]: token });
    expect(apps.code, apps.stdout).toBe(0);
    const refused = await runlet(["hosts", "--json"], { ...env, [ENV.token]: token });
    expect(JSON.parse(refused.stdout)).toMatchObject({ status: 403 });
    const log = await runlet(["audit-log", "--action", "users.create", "--json"], env);
    const entries = JSON.parse(log.stdout).logs as { metadata: { name: string } }[];
    expect(entries.map((e) => e.metadata.name)).toEqual(["Ann", "Ada"]);
  });
});

it("prints --help for init, projects and users", async () => {
  for (const command of ["init", "projects", "users"]) {
    const help = await runlet([command, "--help"], {});
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(new RegExp(`^Usage: runlet ${command}`));
  }
});
