import { existsSync } from "node:fs";
import { mkdir, readdir, readFile, rename, stat, writeFile } from "node:fs/promises";
import { basename, join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { digestOfBundle } from "../common/bundle-digest.ts";
import { AppRegistry } from "./apps.ts";
import { HttpError } from "./http/errors.ts";
import { MAX_BUNDLE_BYTES } from "./limits.ts";
import { bundle, configOf, newHome, removeHome } from "./test-support.ts";

const deployOf = (version: number, files: Record<string, string>) => ({
  project: "prj_1",
  app: "hello",
  version,
  config: configOf("hello"),
  files: bundle(files),
});

async function statusOf(promise: Promise<unknown>): Promise<number | undefined> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  return err instanceof HttpError ? err.status : undefined;
}

describe("AppRegistry", () => {
  let home: string;
  const appDir = () => join(home, "host", "apps", "prj_1", "hello");

  beforeEach(async () => {
    home = await newHome();
  });

  afterEach(async () => {
    await removeHome(home);
  });

  it("writes a version's files and current.json, and loads them again on open", async () => {
    const registry = await AppRegistry.open(home);
    const deployment = await registry.deploy({
      ...deployOf(1, { "main.mjs": "export const run = () => 1;", "lib/util.js": "x" }),
      files: [
        ...bundle({ "main.mjs": "export const run = () => 1;", "lib/util.js": "x" }),
        {
          path: "bin/tool",
          contentBase64: Buffer.from("#!/bin/sh\n").toString("base64"),
          executable: true,
        },
      ],
    });
    expect(deployment.dir).toBe(join(appDir(), "v1"));
    expect(await readFile(join(deployment.dir, "lib/util.js"), "utf8")).toBe("x");
    expect((await stat(join(deployment.dir, "bin/tool"))).mode & 0o111).not.toBe(0);
    const current = JSON.parse(await readFile(join(appDir(), "current.json"), "utf8"));
    expect(current).toMatchObject({ version: 1, config: { name: "hello" } });
    expect((await readdir(appDir())).sort()).toEqual(["current.json", "v1"]);

    const reopened = await AppRegistry.open(home);
    expect(reopened.get("prj_1", "hello")).toEqual(deployment);
    expect(reopened.get("prj_1", "ghost")).toBeUndefined();
  });

  it("removes the project's folder with its last app's, and keeps it while another app is in it", async () => {
    const registry = await AppRegistry.open(home);
    await registry.deploy(deployOf(1, { "main.js": "exports.v = 1;" }));
    const other = { app: "other", config: configOf("other") };
    await registry.deploy({ ...deployOf(1, { "main.js": "exports.v = 1;" }), ...other });
    expect(await registry.remove("prj_1", "hello")).toBe(true);
    expect(await readdir(join(home, "host", "apps", "prj_1"))).toEqual(["other"]);
    expect(await registry.remove("prj_1", "other")).toBe(true);
    expect(await readdir(join(home, "host", "apps"))).toEqual(["package.json"]);
  });

  it("treats the same version again as a no-op, and replaces it when its files differ", async () => {
    const registry = await AppRegistry.open(home);
    const first = await registry.deploy(deployOf(1, { "main.js": "exports.run = () => 1;" }));
    const again = await registry.deploy(deployOf(1, { "main.js": "exports.run = () => 1;" }));
    expect(again.digest).toBe(first.digest);
    const changed = await registry.deploy(deployOf(1, { "main.js": "exports.run = () => 'one';" }));
    expect(changed.digest).not.toBe(first.digest);
    expect(await readFile(join(changed.dir, "main.js"), "utf8")).toBe("exports.run = () => 'one';");
    expect((await readdir(appDir())).sort()).toEqual(["current.json", "v1"]);
  });

  it("runs concurrent deploys of one app one after the other", async () => {
    const registry = await AppRegistry.open(home);
    await Promise.all(
      [1, 2, 3, 2].map((v) => registry.deploy(deployOf(v, { "main.js": `exports.v = ${v};` }))),
    );
    expect(registry.get("prj_1", "hello")?.version).toBe(2);
    expect((await readdir(appDir())).sort()).toEqual(["current.json", "v2", "v3"]);
  });

  it("keeps the files of the current version and the one before, and only the current one's once reopened", async () => {
    const registry = await AppRegistry.open(home);
    for (const v of [1, 2, 3, 4])
      await registry.deploy(deployOf(v, { "main.js": `exports.v = ${v};` }));
    // Each deploy used to leave its folder behind: a host kept every version it ever ran.
    expect((await readdir(appDir())).sort()).toEqual(["current.json", "v3", "v4"]);
    await AppRegistry.open(home);
    expect((await readdir(appDir())).sort()).toEqual(["current.json", "v4"]);
  });

  it("refuses duplicate paths, bad base64, clashing paths and oversized bundles", async () => {
    const registry = await AppRegistry.open(home);
    const file = (path: string, contentBase64 = "") => ({ path, contentBase64 });
    const deploy = (files: { path: string; contentBase64: string }[]) =>
      registry.deploy({ ...deployOf(1, {}), files });
    expect(await statusOf(deploy([file("a.js"), file("a.js")]))).toBe(400);
    expect(await statusOf(deploy([file("a.js", "not base64!")]))).toBe(400);
    expect(await statusOf(deploy([file("a"), file("a/b.js")]))).toBe(400);
    const big = Buffer.alloc(MAX_BUNDLE_BYTES + 1).toString("base64");
    expect(await statusOf(deploy([file("big.bin", big)]))).toBe(413);
    // Nothing was recorded, and no staging folder was left behind (the clashes were found
    // before anything was written: no app folder at all).
    expect(registry.get("prj_1", "hello")).toBeUndefined();
    expect(existsSync(appDir()) ? await readdir(appDir()) : []).toEqual([]);
  });

  it("cleans up after a crash: staging folders go, a swapped-out version comes back", async () => {
    const registry = await AppRegistry.open(home);
    const { dir } = await registry.deploy(deployOf(1, { "main.js": "exports.v = 1;" }));
    // A crash while writing v2, and one in the middle of replacing v1's files.
    await mkdir(join(appDir(), ".staging-abc123"));
    await writeFile(join(appDir(), ".staging-abc123", "main.js"), "half");
    await rename(dir, join(appDir(), ".replaced-v1-0badcafe"));

    const reopened = await AppRegistry.open(home);
    expect(reopened.get("prj_1", "hello")?.version).toBe(1);
    expect((await readdir(appDir())).sort()).toEqual(["current.json", "v1"]);
    expect(await readFile(join(dir, "main.js"), "utf8")).toBe("exports.v = 1;");
  });

  it("leaves no empty folder of a new app whose trial a crash cut off, nor of its project", async () => {
    // Killed during a new app's start check: its staging folder went at the next start, and
    // an empty apps/{project}/{app}/ stayed for good.
    const registry = await AppRegistry.open(home);
    const files = { "main.js": "exports.v = 1;" };
    const staged = await registry.stage({
      ...deployOf(1, files),
      digest: await digestOfBundle(bundle(files)),
    });
    expect(await readdir(appDir())).toEqual([basename(staged.dir)]);
    await AppRegistry.open(home); // the host's restart
    expect(await readdir(join(home, "host", "apps"))).toEqual(["package.json"]);
    // Beside an app of the same project that has a version: its folders stay.
    await registry.deploy({ ...deployOf(1, files), app: "other", config: configOf("other") });
    await registry.stage({ ...deployOf(1, files), digest: await digestOfBundle(bundle(files)) });
    const reopened = await AppRegistry.open(home);
    expect(await readdir(join(home, "host", "apps", "prj_1"))).toEqual(["other"]);
    expect(reopened.get("prj_1", "other")?.version).toBe(1);
  });

  it("skips an app whose current.json is damaged, and keeps the others", async () => {
    const registry = await AppRegistry.open(home);
    await registry.deploy(deployOf(1, { "main.js": "exports.v = 1;" }));
    await registry.deploy({
      ...deployOf(1, { "main.js": "" }),
      app: "other",
      config: configOf("other"),
    });
    await writeFile(join(appDir(), "current.json"), "{ not json");
    const errors: unknown[] = [];
    const original = console.error;
    console.error = (...args: unknown[]) => errors.push(args);
    try {
      const reopened = await AppRegistry.open(home);
      expect(reopened.get("prj_1", "hello")).toBeUndefined();
      expect(reopened.get("prj_1", "other")?.version).toBe(1);
    } finally {
      console.error = original;
    }
    expect(errors).toHaveLength(1);
  });

  describe("a version staged for a deploy's trial", () => {
    const v2 = { "main.js": "exports.v = 2;" };
    const stagedOf = async (files: Record<string, string>) =>
      ({ ...deployOf(2, files), digest: await digestOfBundle(bundle(files)) }) as const;

    it("is kept beside the current version, which stays, until it is made current", async () => {
      const registry = await AppRegistry.open(home);
      await registry.deploy(deployOf(1, { "main.js": "exports.v = 1;" }));
      const staged = await registry.stage(await stagedOf(v2));
      expect(registry.get("prj_1", "hello")?.version).toBe(1);
      expect(await readFile(join(staged.dir, "main.js"), "utf8")).toBe("exports.v = 2;");
      const current = await registry.commit("prj_1", "hello", 2, staged.digest);
      expect(current).toMatchObject({ version: 2, dir: join(appDir(), "v2") });
      expect(registry.get("prj_1", "hello")?.version).toBe(2);
      expect((await readdir(appDir())).sort()).toEqual(["current.json", "v1", "v2"]);
      expect(await registry.commit("prj_1", "hello", 2, staged.digest)).toBeUndefined();
    });

    it("outlives the app's removal: a delete's word can come while the next app is tried", async () => {
      const registry = await AppRegistry.open(home);
      await registry.deploy(deployOf(1, { "main.js": "exports.v = 1;" }));
      const staged = await registry.stage(await stagedOf(v2));
      expect(await registry.remove("prj_1", "hello")).toBe(true);
      expect(await readdir(appDir())).toEqual([basename(staged.dir)]);
      await registry.commit("prj_1", "hello", 2, staged.digest);
      expect(registry.get("prj_1", "hello")?.version).toBe(2);
    });

    it("is dropped as it was last staged, leaving no folder of an app that has no version", async () => {
      const registry = await AppRegistry.open(home);
      const first = await registry.stage(await stagedOf(v2));
      const again = await registry.stage(await stagedOf(v2)); // a retried deploy, same files
      await registry.unstage(first); // the first one's replica unused: the files stay for `again`
      expect(await readdir(appDir())).toEqual([basename(again.dir)]);
      await registry.unstage(again);
      // Nor of its project, which held no other app (an empty one stayed).
      expect(await readdir(join(home, "host", "apps"))).toEqual(["package.json"]);
      expect(await statusOf(registry.stage({ ...(await stagedOf(v2)), digest: "0" }))).toBe(400);
    });
  });
});
