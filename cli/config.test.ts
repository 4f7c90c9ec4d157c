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
  expect(await loadConfig({})).toEqual(local);
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
