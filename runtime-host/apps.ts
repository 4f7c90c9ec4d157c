/** The registry of deployed apps: their current versions, in memory and persisted under home. */
import { randomBytes } from "node:crypto";
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { basename, join } from "node:path";
import { z } from "zod";
import {
  type AppConfig,
  appConfigSchema,
  type BundleFile,
  describeZodError,
} from "../common/app-config.ts";
import {
  appRoot,
  appsRoot,
  currentFile,
  REPLACED_PREFIX,
  STAGING_PREFIX,
  versionDirName,
} from "../common/app-paths.ts";
import { bundleDigest } from "../common/bundle-digest.ts";
import { decodeBundle, writeVersion } from "./bundle.ts";
import { HttpError } from "./http/errors.ts";
import { appKey, isValidName } from "./names.ts";
import type { PoolTarget } from "./pool/pool.ts";

/** One app's current version, ready to run. */
export interface Deployment extends PoolTarget {
  config: AppConfig;
  deployedAt: string;
}

export interface DeployInput {
  project: string;
  app: string;
  version: number;
  config: AppConfig;
  files: readonly BundleFile[];
  /** The digest the control plane recorded: a bundle that does not match is refused unwritten. */
  digest?: string;
}

const currentSchema = z.object({
  version: z.number().int().positive(),
  digest: z.string().min(1),
  config: appConfigSchema,
  deployedAt: z.string(),
});

type CurrentJson = z.infer<typeof currentSchema>;

const exists = (path: string) =>
  stat(path).then(
    () => true,
    () => false,
  );

/** Writes JSON atomically: a temp file beside it, then a rename. */
async function writeJsonAtomic(path: string, value: unknown): Promise<void> {
  const temp = `${path}.${randomBytes(4).toString("hex")}.tmp`;
  await writeFile(temp, `${JSON.stringify(value, null, 2)}\n`);
  await rename(temp, path);
}

/** Finishes or undoes what a crash interrupted in one app's folder. */
async function recoverAppDir(dir: string): Promise<void> {
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
async function removeVersionsBut(
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

async function subdirs(dir: string): Promise<string[]> {
  try {
    const entries = await readdir(dir, { withFileTypes: true });
    return entries.filter((e) => e.isDirectory() && isValidName(e.name)).map((e) => e.name);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw err;
  }
}

export class AppRegistry {
  readonly #apps = new Map<string, Deployment>();
  /** Deploys and removals of one app run one after the other. */
  readonly #queues = new Map<string, Promise<unknown>>();
  /** The version folders replicas are still starting from (the pool's), kept through deploys. */
  #starting: (project: string, app: string) => readonly string[] = () => [];

  private constructor(readonly root: string) {}

  /** Opens the registry under `home`, loading every app deployed before. */
  static async open(home: string): Promise<AppRegistry> {
    const registry = new AppRegistry(appsRoot(home));
    await mkdir(registry.root, { recursive: true, mode: 0o700 });
    // Without it an app's `main.js` would take the "type" of a package.json above home.
    await writeFile(join(registry.root, "package.json"), '{ "private": true }\n');
    await registry.#load();
    return registry;
  }

  /**
   * Tells the registry which version folders replicas are still copying (`ReplicaPool`'s
   * `startingFrom`): a deploy keeps them, where it kept only the version before, and a replica of
   * v1 starting while v2 and v3 arrived failed with ENOENT. The next deploy removes them.
   */
  keepWhileStarting(starting: (project: string, app: string) => readonly string[]): void {
    this.#starting = starting;
  }

  get(project: string, app: string): Deployment | undefined {
    return this.#apps.get(appKey(project, app));
  }

  list(): Deployment[] {
    return [...this.#apps.values()];
  }

  /**
   * Writes the version's files, then records it as the app's current version. The same version
   * may come again (a retried deploy); if its files differ they replace the old ones.
   */
  deploy(input: DeployInput): Promise<Deployment> {
    return this.#serial(input.project, input.app, () => this.#deploy(input));
  }

  /**
   * Forgets the app and deletes its files; false if it was not deployed. The record goes first,
   * so a crash halfway leaves an unknown app with stray files, never a known app without them.
   */
  remove(project: string, app: string): Promise<boolean> {
    return this.#serial(project, app, async () => {
      const dir = appRoot(this.root, project, app);
      const known = this.#apps.delete(appKey(project, app));
      await rm(currentFile(dir), { force: true });
      await rm(dir, { recursive: true, force: true });
      return known;
    });
  }

  /** Runs `work` after every earlier deploy or removal of the same app. */
  #serial<T>(project: string, app: string, work: () => Promise<T>): Promise<T> {
    const key = appKey(project, app);
    const run = (this.#queues.get(key) ?? Promise.resolve()).then(work);
    const queued = run.catch(() => {});
    this.#queues.set(key, queued);
    void queued.then(() => {
      if (this.#queues.get(key) === queued) this.#queues.delete(key);
    });
    return run;
  }

  async #deploy(input: DeployInput): Promise<Deployment> {
    const { project, app, version, config, files } = input;
    const decoded = decodeBundle(files);
    const digest = await bundleDigest(decoded);
    if (input.digest !== undefined && digest !== input.digest)
      throw new HttpError(
        502,
        `the bundle of '${app}' version ${version} does not match its digest: not run`,
      );
    const dir = appRoot(this.root, project, app);
    const known = this.get(project, app);
    const unchanged =
      known?.version === version &&
      known.digest === digest &&
      (await exists(join(dir, versionDirName(version))));
    if (!unchanged) await writeVersion(dir, version, decoded);
    const current: CurrentJson = { version, digest, config, deployedAt: new Date().toISOString() };
    await writeJsonAtomic(currentFile(dir), current);
    const deployment = this.#toDeployment(project, app, current);
    this.#apps.set(appKey(project, app), deployment);
    // The version before stays: a replica of it may be copying its files this instant; so do
    // older ones replicas are still starting from.
    const starting = this.#starting(project, app).filter((d) => d.startsWith(`${dir}/`));
    await removeVersionsBut(dir, [version, ...(known ? [known.version] : [])], starting);
    return deployment;
  }

  #toDeployment(project: string, app: string, current: CurrentJson): Deployment {
    return {
      project,
      app,
      version: current.version,
      digest: current.digest,
      config: current.config,
      deployedAt: current.deployedAt,
      dir: join(appRoot(this.root, project, app), versionDirName(current.version)),
    };
  }

  async #load(): Promise<void> {
    for (const project of await subdirs(this.root)) {
      for (const app of await subdirs(join(this.root, project))) {
        const dir = appRoot(this.root, project, app);
        try {
          await recoverAppDir(dir);
          const raw: unknown = JSON.parse(await readFile(currentFile(dir), "utf8"));
          const current = currentSchema.parse(raw);
          const deployment = this.#toDeployment(project, app, current);
          if (!(await exists(deployment.dir))) throw new Error(`${deployment.dir} is missing`);
          await removeVersionsBut(dir, [current.version]); // no replica runs yet
          this.#apps.set(appKey(project, app), deployment);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code === "ENOENT") continue;
          const why = err instanceof z.ZodError ? describeZodError(err) : (err as Error).message;
          console.error(`runtime host: skipping app ${appKey(project, app)}: ${why}`);
        }
      }
    }
  }
}
