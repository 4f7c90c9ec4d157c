/** The registry of deployed apps: their current versions, in memory and persisted under home. */
import { mkdir, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { basename, join } from "node:path";
import * as z from "zod";
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
  STAGING_PREFIX,
  versionDirName,
} from "../common/app-paths.ts";
import { bundleDigest } from "../common/bundle-digest.ts";
import {
  exists,
  recoverAppDir,
  removeAppDir,
  removeIfEmpty,
  removeVersionsBut,
  subdirs,
  writeJsonAtomic,
} from "./app-folders.ts";
import { decodeBundle, moveIntoPlace, writeVersion } from "./bundle.ts";
import { HttpError } from "./http/errors.ts";
import { appKey } from "./names.ts";
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

const stagedKey = (project: string, app: string, version: number, digest: string) =>
  `${appKey(project, app)}/${version}/${digest}`;

export class AppRegistry {
  readonly #apps = new Map<string, Deployment>();
  /** Versions written beside the current one before they are current (`stage`), by `stagedKey`. */
  readonly #staged = new Map<string, Deployment>();
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
   * Writes a version's files beside the app's current one without making it current: a deploy's
   * trial (trials.ts) starts a replica from them before the control plane records the version.
   * In a folder named by the version and its digest (two trials of one number, from two control
   * planes at once, write apart), under the staging prefix, so a host that restarts drops it.
   * `commit` makes it current, `unstage` drops it.
   */
  stage(input: DeployInput & { digest: string }): Promise<Deployment> {
    return this.#serial(input.project, input.app, async () => {
      const { project, app, version, config, digest } = input;
      const key = stagedKey(project, app, version, digest);
      const known = this.#staged.get(key);
      // The same files again (a retried deploy): a new record of them, so that dropping the
      // earlier one (its replica unused) leaves them to this one.
      if (known) {
        const again = { ...known };
        this.#staged.set(key, again);
        return again;
      }
      const decoded = decodeBundle(input.files);
      if ((await bundleDigest(decoded)) !== digest)
        throw new HttpError(
          400,
          `the bundle of '${app}' version ${version} does not match its digest`,
        );
      const name = `${STAGING_PREFIX}trial-v${version}-${digest.slice(0, 16)}`;
      const dir = await writeVersion(appRoot(this.root, project, app), version, decoded, name);
      const staged = {
        project,
        app,
        version,
        digest,
        config,
        dir,
        deployedAt: new Date().toISOString(),
      };
      this.#staged.set(key, staged);
      return staged;
    });
  }

  /** Makes a staged version current (its folder becomes `v{version}`); undefined if none is. */
  commit(
    project: string,
    app: string,
    version: number,
    digest: string,
  ): Promise<Deployment | undefined> {
    return this.#serial(project, app, async () => {
      const key = stagedKey(project, app, version, digest);
      const staged = this.#staged.get(key);
      if (!staged) return undefined;
      this.#staged.delete(key);
      await moveIntoPlace(
        staged.dir,
        join(appRoot(this.root, project, app), versionDirName(version)),
      );
      return this.#makeCurrent(project, app, { version, digest, config: staged.config });
    });
  }

  /**
   * Drops a staged version, as `stage` gave it (its trial failed, or it was never made current),
   * unless it was made current or staged again since; an app with no current version here
   * leaves no folder behind.
   */
  unstage(staged: Deployment): Promise<void> {
    const { project, app } = staged;
    return this.#serial(project, app, async () => {
      const key = stagedKey(project, app, staged.version, staged.digest);
      if (this.#staged.get(key) !== staged) return;
      this.#staged.delete(key);
      // An app with nothing else here: its folder goes (its project's too if it was the last),
      // not only the staged version's.
      const alone = !this.get(project, app) && this.#stagedOf(project, app).length === 0;
      if (alone) await removeAppDir(appRoot(this.root, project, app));
      else await rm(staged.dir, { recursive: true, force: true });
    });
  }

  /** The keys of the app's staged versions. */
  #stagedOf(project: string, app: string): string[] {
    const prefix = `${appKey(project, app)}/`;
    return [...this.#staged.keys()].filter((key) => key.startsWith(prefix));
  }

  /**
   * Forgets the app and deletes its files; false if it was not deployed. The record goes first,
   * so a crash halfway leaves an unknown app with stray files, never a known app without them.
   * Versions staged for a deploy's trial stay: they are no app's yet. A heartbeat's word that
   * the app is gone (deleted) can come while the next app of its name is being tried, and took
   * the files its replica was starting from.
   */
  remove(project: string, app: string): Promise<boolean> {
    return this.#serial(project, app, async () => {
      const dir = appRoot(this.root, project, app);
      const known = this.#apps.delete(appKey(project, app));
      await rm(currentFile(dir), { force: true });
      const staged = new Set(
        this.#stagedOf(project, app).map((key) => basename(this.#staged.get(key)?.dir ?? "")),
      );
      if (staged.size === 0) await removeAppDir(dir);
      else
        for (const entry of await readdir(dir))
          if (!staged.has(entry)) await rm(join(dir, entry), { recursive: true, force: true });
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
    return this.#makeCurrent(project, app, { version, digest, config });
  }

  /**
   * Records `v{version}`, written already, as the app's current version; removes the versions
   * before the one it replaces.
   */
  async #makeCurrent(
    project: string,
    app: string,
    { version, digest, config }: Pick<CurrentJson, "version" | "digest" | "config">,
  ): Promise<Deployment> {
    const dir = appRoot(this.root, project, app);
    const known = this.get(project, app);
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
          if ((err as NodeJS.ErrnoException).code === "ENOENT") {
            await removeIfEmpty(dir); // a new app's trial, killed: its staging folder went
            continue;
          }
          const why = err instanceof z.ZodError ? describeZodError(err) : (err as Error).message;
          console.error(`runtime host: skipping app ${appKey(project, app)}: ${why}`);
        }
      }
    }
  }
}
