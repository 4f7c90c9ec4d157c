/**
 * An app's folder on the runtime host (common/app-paths.ts): what a crash left half done there,
 * the versions no replica needs any more, its `current.json`.
 */
import { randomBytes } from "node:crypto";
import { readdir, rename, rm, rmdir, stat, writeFile } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { REPLACED_PREFIX, STAGING_PREFIX, versionDirName } from "../common/app-paths.ts";
import { isValidName } from "./names.ts";

export const exists = (path: string) =>
  stat(path).then(
    () => true,
    () => false,
  );

/** Writes JSON atomically: a temp file beside it, then a rename. */
export async function writeJsonAtomic(path: string, value: unknown): Promise<void> {
  const temp = `${path}.${randomBytes(4).toString("hex")}.tmp`;
  await writeFile(temp, `${JSON.stringify(value, null, 2)}\n`);
  await rename(temp, path);
}

/** Finishes or undoes what a crash interrupted in one app's folder. */
export async function recoverAppDir(dir: string): Promise<void> {
  for (const entry of await readdir(dir)) {
    const path = join(dir, entry);
    if (
      entry.startsWith(STAGING_PREFIX) ||
      (entry.startsWith("current.json.") && entry.endsWith(".tmp"))
    ) {
      await rm(path, { recursive: true, force: true });
    } else if (entry.startsWith(REPLACED_PREFIX)) {
      const version = entry.slice(REPLACED_PREFIX.length).replace(/-[0-9a-f]+$/, "");
      const original = join(dir, version);
      if (await exists(original)) await rm(path, { recursive: true, force: true });
      else await rename(path, original);
    }
  }
}

/**
 * Removes the app's version folders other than `keep`: a replica runs from a copy of its
 * version's files (its slot), so an old version's folder serves only replicas being started
 * from it; kept, every deploy would stay on the host's disk for as long as the app lives.
 */
export async function removeVersionsBut(
  dir: string,
  keep: readonly number[],
  keepDirs: readonly string[] = [],
): Promise<void> {
  const kept = new Set([...keep.map(versionDirName), ...keepDirs.map((d) => basename(d))]);
  for (const entry of await readdir(dir)) {
    if (/^v[0-9]+$/.test(entry) && !kept.has(entry))
      await rm(join(dir, entry), { recursive: true, force: true });
  }
}

/** The folders of `dir` named as projects and apps are; none if it does not exist. */
export async function subdirs(dir: string): Promise<string[]> {
  try {
    const entries = await readdir(dir, { withFileTypes: true });
    return entries.filter((e) => e.isDirectory() && isValidName(e.name)).map((e) => e.name);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw err;
  }
}

/**
 * Removes an app's folder, and its project's once that holds no other app: a refused new app,
 * or the last app deleted, left an empty `apps/{project}/` for good.
 */
export async function removeAppDir(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
  // Only if empty: another app of the project being written meanwhile keeps it (ENOTEMPTY).
  await rmdir(dirname(dir)).catch(() => {});
}

/**
 * Removes an app's folder that is empty, and its project's once that is empty too: a host killed
 * while it tried a new app's first version (a deploy's start check) had its staging folder
 * dropped at its next start (`recoverAppDir`), and the app's empty folder stayed for good.
 */
export async function removeIfEmpty(dir: string): Promise<void> {
  const removed = await rmdir(dir).then(
    () => true,
    () => false, // ENOTEMPTY: a version, its current.json; or gone already
  );
  if (removed) await rmdir(dirname(dir)).catch(() => {});
}
