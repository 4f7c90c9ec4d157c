/**
 * Bundles no deployment records, dropped as the control plane on Node starts: a deploy writes its
 * version's bundle before the row that names it (bundles.ts), and an app's delete removes its
 * bundles after its rows go (routes/apps-delete.ts). A control plane killed between the two
 * (during a deploy's start check, which may last minutes, or while a delete waits for the hosts)
 * left the files for good: up to 20 MiB a deploy, and every kept version of a deleted app. At the
 * start no deploy or delete of this control plane is under way, so a file no row names is one of
 * those: its app's folder is read against the app's recorded versions (recorded-bundles.ts).
 */
import { readdir, rm, rmdir } from "node:fs/promises";
import { join } from "node:path";
import type { Database } from "./db/index.ts";
import { isStray, recordedNames } from "./recorded-bundles.ts";

/** Removes the bundle files under `dir` that no deployment records; says which it removed. */
export async function dropStrayBundles(db: Database, dir: string): Promise<string[]> {
  const dropped: string[] = [];
  for (const project of await entries(dir)) {
    for (const app of await entries(join(dir, project))) {
      const folder = join(dir, project, app);
      const recorded = await recordedNames(db, project, app);
      for (const name of await entries(folder)) {
        if (!isStray(name, recorded)) continue;
        await rm(join(folder, name), { force: true });
        dropped.push(`${project}/${app}/${name}`);
      }
      for (const empty of [folder, join(dir, project)]) {
        try {
          await rmdir(empty);
        } catch {
          break; // not empty: it stays, and so does its parent
        }
      }
    }
  }
  return dropped;
}

/** The names in `dir`; none when it is not there (no deploy yet) or not a folder. */
async function entries(dir: string): Promise<string[]> {
  return readdir(dir).catch(() => []);
}
