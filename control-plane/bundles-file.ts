/** The control plane on Node keeps bundles as files: `{dir}/{project}/{app}/v{N}-{digest}.json`. */
import { randomBytes } from "node:crypto";
import { mkdir, readdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { type BundleStore, bundleName, namesUpTo } from "./bundles.ts";

export function fileBundles(dir: string): BundleStore {
  return {
    async put(key, bundle) {
      const path = join(dir, bundleName(key));
      await mkdir(dirname(path), { recursive: true, mode: 0o700 });
      const temp = `${path}.${randomBytes(4).toString("hex")}.tmp`;
      try {
        await writeFile(temp, JSON.stringify(bundle), { mode: 0o600 });
        await rename(temp, path);
      } catch (err) {
        await rm(temp, { force: true }); // a part written to a full disk stays no longer
        throw err;
      }
    },
    async get(key) {
      return readFile(join(dir, bundleName(key)), "utf8").catch((err: NodeJS.ErrnoException) => {
        if (err.code === "ENOENT") return undefined;
        throw err;
      });
    },
    async forget(key) {
      await rm(join(dir, bundleName(key)), { force: true });
    },
    async forgetUpTo(project, app, version) {
      const folder = join(dir, project, app);
      const names = await readdir(folder).catch((err: NodeJS.ErrnoException) => {
        if (err.code === "ENOENT") return [];
        throw err;
      });
      for (const name of namesUpTo(names, version)) await rm(join(folder, name), { force: true });
    },
    async remove(project, app) {
      await rm(join(dir, project, app), { recursive: true, force: true });
    },
  };
}
