/** The control plane on Node keeps bundles as files: `{dir}/{project}/{app}/v{N}-{digest}.json`. */
import { randomBytes } from "node:crypto";
import { mkdir, readdir, readFile, rename, rm, rmdir, writeFile } from "node:fs/promises";
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
      await removeEmpty(dir, key.project, key.app);
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
      await removeEmpty(dir, project);
    },
  };
}

/**
 * Removes the app's folder, then its project's, if nothing is left in them: a refused deploy of a
 * new app left its empty folder for good (and a project's stayed after its last app went). Any
 * deploys of the app run one after another, and another app's write makes its own folders again.
 */
async function removeEmpty(dir: string, project: string, app?: string): Promise<void> {
  for (const folder of app ? [join(dir, project, app), join(dir, project)] : [join(dir, project)]) {
    try {
      await rmdir(folder);
    } catch {
      return; // not empty (or gone already): it stays, and so does its parent
    }
  }
}
