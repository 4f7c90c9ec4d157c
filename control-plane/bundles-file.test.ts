// Bundles as files: a write that fails leaves no part of itself behind (a full disk kept every
// failed deploy's part, and filled up for good).
import { mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { DeployRequest } from "../common/protocol/deploy.ts";
import { fileBundles } from "./bundles-file.ts";
import { bundleStoreCases } from "./testing/bundle-store.cases.ts";

const dirs: string[] = [];
afterAll(() => Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true }))));

bundleStoreCases("files", async () => {
  const dir = await mkdtemp(join(tmpdir(), "runlet-bundles-"));
  dirs.push(dir);
  return fileBundles(dir);
});

describe("fileBundles", () => {
  it("forgets the part a write of an old version left behind with the version", async () => {
    const dir = await mkdtemp(join(tmpdir(), "runlet-bundles-"));
    try {
      const folder = join(dir, "prj", "app");
      await mkdir(folder, { recursive: true });
      for (const name of ["v1-ab.json.0f0f0f0f.tmp", "v2-cd.json", "notes.txt"])
        await writeFile(join(folder, name), "");
      await fileBundles(dir).forgetUpTo("prj", "app", 1);
      expect((await readdir(folder)).sort()).toEqual(["notes.txt", "v2-cd.json"]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("leaves no folder of a new app whose only bundle it forgot (a refused deploy), nor of its project", async () => {
    const dir = await mkdtemp(join(tmpdir(), "runlet-bundles-"));
    try {
      const bundles = fileBundles(dir);
      const bundle = { version: 1, files: [] } as unknown as DeployRequest;
      const kept = { project: "prj", app: "kept", version: 1, digest: "ab" };
      const refused = { project: "prj", app: "refused", version: 1, digest: "cd" };
      await bundles.put(kept, bundle);
      await bundles.put(refused, bundle);
      await bundles.forget(refused);
      expect(await readdir(join(dir, "prj"))).toEqual(["kept"]);
      await bundles.remove("prj", "kept");
      await bundles.put({ ...refused, project: "new" }, bundle);
      await bundles.forget({ ...refused, project: "new" });
      expect(await readdir(dir)).toEqual([]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("keeps nothing of a bundle it could not put in place", async () => {
    const dir = await mkdtemp(join(tmpdir(), "runlet-bundles-"));
    try {
      // Where v1.json should go, a folder with a file in it: the rename fails.
      await mkdir(join(dir, "prj", "app", "v1.json"), { recursive: true });
      await writeFile(join(dir, "prj", "app", "v1.json", "x"), "");
      const bundle = { version: 1, files: [] } as unknown as DeployRequest;
      await expect(
        fileBundles(dir).put({ project: "prj", app: "app", version: 1 }, bundle),
      ).rejects.toThrow();
      expect(await readdir(join(dir, "prj", "app"))).toEqual(["v1.json"]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
