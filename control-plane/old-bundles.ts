/**
 * Live app versions deployed before the control plane kept bundles (their deployment has no
 * digest): the control plane of then handed their files to `runlet start`'s runtime host, which
 * keeps them in the same RUNLET_HOME (common/app-paths.ts), and nowhere else. A host that fetches
 * a version from the control plane (the others of RUNLET_HOSTS, a `runlet host`) found none, and
 * answered the calls placed on it 404 "not deployed". At its start on Node, the control plane
 * keeps each such version's files from there, if they still are what that host recorded (their
 * digest), and records their digest. A version not found there stays as it was.
 */
import { readdir, readFile, stat } from "node:fs/promises";
import { join, relative } from "node:path";
import { and, eq, isNull } from "drizzle-orm";
import type { AppConfig, BundleFile } from "../common/app-config.ts";
import { appRoot, appsRoot, currentFile, versionDirName } from "../common/app-paths.ts";
import { bundleDigest, type DigestFile } from "../common/bundle-digest.ts";
import type { BundleStore } from "./bundles.ts";
import type { Database } from "./db/index.ts";
import { apps, deployments } from "./db/schema.ts";

/** Keeps what it can; says which versions it kept. */
export async function keepOldBundles(
  db: Database,
  bundles: BundleStore,
  home: string,
): Promise<string[]> {
  const old = await db
    .select({
      id: deployments.id,
      project: apps.projectId,
      app: apps.name,
      version: deployments.version,
      config: deployments.config,
    })
    .from(deployments)
    .innerJoin(
      apps,
      and(eq(apps.id, deployments.appId), eq(apps.currentVersion, deployments.version)),
    )
    .where(isNull(deployments.digest));
  const kept: string[] = [];
  for (const { id, project, app, version, config } of old) {
    const name = `${project}/${app} v${version}`;
    try {
      const copy = await hostCopy(home, project, app, version);
      if (!copy) continue;
      const files: BundleFile[] = copy.files.map((f) => ({
        path: f.path,
        contentBase64: Buffer.from(f.data).toString("base64"),
        ...(f.executable ? { executable: true } : {}),
      }));
      const key = { project, app, version, digest: copy.digest };
      await bundles.put(key, { version, config: config as AppConfig, files });
      await db.update(deployments).set({ digest: copy.digest }).where(eq(deployments.id, id));
      kept.push(name);
    } catch (err) {
      console.error(`control plane: the files of ${name} were not kept: ${(err as Error).message}`);
    }
  }
  return kept;
}

/** The version's files as the host of `home` keeps them, if they match the digest it recorded. */
async function hostCopy(home: string, project: string, app: string, version: number) {
  const dir = appRoot(appsRoot(home), project, app);
  let current: { version?: unknown; digest?: unknown };
  try {
    current = JSON.parse(await readFile(currentFile(dir), "utf8"));
  } catch {
    return undefined; // not there (another machine's host had it), or unreadable
  }
  if (current.version !== version || typeof current.digest !== "string") return undefined;
  const files = await filesUnder(join(dir, versionDirName(version)));
  if (files.length === 0 || (await bundleDigest(files)) !== current.digest) return undefined;
  return { digest: current.digest, files };
}

async function filesUnder(root: string, dir = root): Promise<DigestFile[]> {
  const files: DigestFile[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) files.push(...(await filesUnder(root, path)));
    else if (entry.isFile())
      files.push({
        path: relative(root, path),
        data: new Uint8Array(await readFile(path)),
        executable: ((await stat(path)).mode & 0o111) !== 0,
      });
  }
  return files;
}
