// Where the CLI finds a local Runlet's credentials: RUNLET_HOME, else the nearest .runlet with a
// local.json in this folder or above (`cd examples/hello && npx runlet deploy` had found none).
import { mkdir, mkdtemp, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { cliHome, loadConfig } from "./config.ts";

let root: string;
const cwd = process.cwd();
beforeEach(async () => {
  root = await realpath(await mkdtemp(join(tmpdir(), "runlet-cli-home-")));
});
afterEach(async () => {
  process.chdir(cwd);
  await rm(root, { recursive: true, force: true });
});

it("finds the nearest .runlet/local.json above the current folder, unless RUNLET_HOME says", async () => {
  const local = { baseUrl: "http://b", apiUrl: "http://a", projectId: "prj_1", token: "t" };
  await mkdir(join(root, ".runlet"));
  await writeFile(join(root, ".runlet", "local.json"), JSON.stringify(local));
  const app = join(root, "examples", "hello");
  await mkdir(app, { recursive: true });
  process.chdir(app);
  expect(cliHome({})).toBe(join(root, ".runlet"));
  expect(await loadConfig({})).toEqual({
    ...local,
    projectFrom: `projectId of ${join(root, ".runlet", "local.json")}`,
  });
  expect(cliHome({ RUNLET_HOME: "/elsewhere" })).toBe("/elsewhere");
});

it("says where it looked when there is none", async () => {
  process.chdir(root);
  expect(cliHome({})).toBe(join(root, ".runlet"));
  await expect(loadConfig({})).rejects.toThrow(
    `no ${join(root, ".runlet", "local.json")} (nor a .runlet/local.json in a folder above this one)`,
  );
});

it("takes no local.json that someone else may have written", async () => {
  const { chmod } = await import("node:fs/promises");
  await mkdir(join(root, ".runlet"));
  await writeFile(join(root, ".runlet", "local.json"), "{}");
  await chmod(join(root, ".runlet", "local.json"), 0o600);
  const sub = join(root, "sub");
  await mkdir(sub);
  process.chdir(sub);
  expect(cliHome({})).toBe(join(root, ".runlet"));
  await chmod(join(root, ".runlet", "local.json"), 0o666); // anyone may change it: not taken
  expect(cliHome({})).toBe(join(sub, ".runlet"));
});

it("says a local.json that is there but not credentials is not one, rather than missing", async () => {
  await mkdir(join(root, ".runlet"));
  await writeFile(join(root, ".runlet", "local.json"), "{", { mode: 0o600 });
  const error = await loadConfig({ RUNLET_HOME: join(root, ".runlet") }).catch((e: Error) => e);
  expect((error as Error).message).toContain(
    `${join(root, ".runlet", "local.json")} is not one (not JSON, or without baseUrl, apiUrl, projectId and token)`,
  );
});

/** A token as a service account's looks to the CLI: its claims read, never verified here. */
function tokenOf(claims: Record<string, unknown>): string {
  const part = (v: unknown) => Buffer.from(JSON.stringify(v)).toString("base64url");
  return `${part({ alg: "ES256", kid: "k1" })}.${part(claims)}.c2ln`;
}

it("reads the project from a service account's token when RUNLET_PROJECT is not set", async () => {
  const token = tokenOf({ sub: "sa_1", prj: "prj_ci" });
  const ci = {
    RUNLET_HOME: join(root, "none"),
    RUNLET_BASE_URL: "http://b",
    RUNLET_API_URL: "http://a",
    RUNLET_TOKEN: token,
  };
  expect(await loadConfig(ci)).toEqual({
    baseUrl: "http://b",
    apiUrl: "http://a",
    projectId: "prj_ci",
    token,
    projectFrom: "its service account's token",
  });
  expect((await loadConfig({ ...ci, RUNLET_PROJECT: "prj_ci" })).projectId).toBe("prj_ci");
  // A local.json's project goes with local.json's token, not with this one.
  await mkdir(join(root, "home"));
  const local = { baseUrl: "http://b", apiUrl: "http://a", projectId: "prj_mine", token: "t" };
  await writeFile(join(root, "home", "local.json"), JSON.stringify(local), { mode: 0o600 });
  const home = join(root, "home");
  expect((await loadConfig({ RUNLET_HOME: home, RUNLET_TOKEN: token })).projectId).toBe("prj_ci");
  // A user's token names no project: its user's one project is asked for (cli/commands/
  // projects.test.ts, against a real control plane). A value that is no token at all: it was told that credentials were missing, and
  // to set the variables it had set.
  await expect(loadConfig({ ...ci, RUNLET_TOKEN: "$RUNLET_CI_TOKEN" })).rejects.toThrow(
    "no Runlet credentials (projectId): RUNLET_TOKEN is not a Runlet token (a JWT: three parts joined by dots), so it names no project: check what sets it (a CI secret's name, say)",
  );
});

it("refuses, in one line, a RUNLET_PROJECT other than the service account token's project", async () => {
  const env = {
    RUNLET_HOME: join(root, "none"),
    RUNLET_BASE_URL: "http://b",
    RUNLET_API_URL: "http://a",
    RUNLET_TOKEN: tokenOf({ sub: "sa_1", prj: "prj_ci" }),
    RUNLET_PROJECT: "prj_other",
  };
  const error = (await loadConfig(env).catch((e: Error) => e)) as Error;
  expect(error.message).toBe(
    "RUNLET_PROJECT is prj_other, but the token is a service account's of project prj_ci (token from RUNLET_TOKEN): unset RUNLET_PROJECT, or use a token of prj_other",
  );
});
