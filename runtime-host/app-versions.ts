/**
 * Which version of each app this host runs, when the control plane hands out versions
 * (docs/hosts.md): it says which version is current — at deploy (`PUT
 * /internal/apps/{project}/{app}/current`) and in each heartbeat's answer — and the host fetches
 * that version's bundle when a call first needs it (at once if it runs the app, or is to warm
 * it), checks its digest, and switches. An app this host never had is looked up at its first
 * call. Without a control plane (a host on its own, pushed to with `PUT /internal/apps/…`) the
 * registry's version is the one.
 */
import { timeOfId } from "../common/ids.ts";
import type { DeployRequest } from "../common/protocol/deploy.ts";
import type { AppRegistry, Deployment } from "./apps.ts";
import { appKey } from "./names.ts";
import type { ReplicaPool } from "./pool/pool.ts";
import type { ReplicaOutputs } from "./pool/replica-output.ts";
import type { Trials } from "./pool/trials.ts";

export interface Current {
  version: number;
  digest: string | null;
  /** The app's id (sortable by time), where the control plane says it. */
  appId?: string;
  /** This host is to start the app's `min_replicas` now (the control plane chose it). */
  warm?: boolean;
}

/** What the host asks the control plane (membership.ts). */
export interface BundleSource {
  /** The app's current version; undefined if the app does not exist. */
  current(project: string, app: string): Promise<Current | undefined>;
  /** A version's bundle; undefined if it does not exist (any more). */
  bundle(project: string, app: string, version: number): Promise<DeployRequest | undefined>;
}

export class AppVersions {
  readonly #current = new Map<string, Current>();
  readonly #fetching = new Map<string, Promise<Deployment | undefined>>();
  /** How many times this host took news of an app's current version, and when of each app. */
  #heard = 0;
  readonly #heardAt = new Map<string, number>();
  #source: BundleSource | undefined;

  constructor(
    private readonly registry: AppRegistry,
    private readonly pool: ReplicaPool,
    private readonly outputs?: Pick<ReplicaOutputs, "forget">,
    /** The replicas deploys' trials hold: those of a deleted app, or of a replaced version, stop. */
    private readonly trials?: Pick<Trials, "drop">,
  ) {
    // A deploy keeps the version folders replicas are still starting from (apps.ts).
    registry.keepWhileStarting((project, app) => pool.startingFrom(project, app));
  }

  /** From now on versions come from `source` (the host joined a control plane). */
  fetchFrom(source: BundleSource): void {
    this.#source = source;
  }

  /**
   * The control plane says `version` is the app's current one. A host that runs the app, or is
   * to warm it, switches now: else the first call after a deploy (or after this host restarted
   * on an older version) waited for the new version's cold start.
   */
  setCurrent(project: string, app: string, current: Current): void {
    if (this.#note(project, app, current)) this.trials?.drop(project, app, current.version);
    if (!this.#source || !(current.warm || this.pool.isRunning(project, app))) return;
    this.deployment(project, app).catch((err: Error) =>
      console.error(
        `runtime host: could not switch '${app}' to its current version: ${err.message}`,
      ),
    );
  }

  /**
   * Keeps the newest news of the app's current version: a later version of the same app, or any
   * version of a later app of its name (deleted and deployed again: versions from 1 again). An
   * earlier one (a heartbeat's answer overtaken by a deploy's) is left aside. Whether it was kept.
   */
  #note(project: string, app: string, current: Current): boolean {
    const known = this.#current.get(appKey(project, app));
    const sameApp = !known?.appId || !current.appId || known.appId === current.appId;
    const newer = sameApp
      ? !known || current.version >= known.version
      : (current.appId as string) > (known?.appId as string);
    if (!newer) return false;
    this.#current.set(appKey(project, app), current);
    this.#heardAt.set(appKey(project, app), ++this.#heard);
    return true;
  }

  /** How much news of current versions this host has taken: a heartbeat notes it as it goes. */
  get heard(): number {
    return this.#heard;
  }

  /**
   * A heartbeat's answer says the app is gone (there was none of its name when the control plane
   * answered). Unless this host took news of the app since that heartbeat went (`sentAt`: its
   * `heard` then): the app may have been deployed again under its name meanwhile, its deploy's
   * news overtaking the answer, which then speaks of the deleted app; removing the new one's
   * files and replicas left it down until its next call. The next heartbeat asks again.
   * Resolves with whether the app was removed.
   */
  async gone(project: string, app: string, sentAt: number): Promise<boolean> {
    if ((this.#heardAt.get(appKey(project, app)) ?? 0) > sentAt) return false;
    await this.remove(project, app);
    return true;
  }

  /**
   * The control plane deleted the app of id `appId` (absent: an older control plane's word for
   * the app of that name). A later app of the name this host heard of is kept: its deploy's news
   * came before this stop, held up on its way (a host slow past the control plane's 30 s).
   */
  async deleted(project: string, app: string, appId?: string): Promise<void> {
    const known = this.#current.get(appKey(project, app))?.appId;
    if (appId && known && known > appId) return;
    await this.remove(project, app);
    this.trials?.drop(project, app);
  }

  /** The app is gone: forget it. */
  async remove(project: string, app: string): Promise<void> {
    this.#current.delete(appKey(project, app));
    this.#heardAt.delete(appKey(project, app));
    await this.registry.remove(project, app);
    this.pool.removed(project, app);
    this.outputs?.forget(project, app);
  }

  /**
   * The deployment a call of the app runs on: the one this host has if it is the control plane's
   * current one (the same version and files), else fetched first. What this host has from before
   * a restart is checked with the control plane at the app's first call.
   */
  async deployment(
    project: string,
    app: string,
    acceptedFor?: string,
  ): Promise<Deployment | undefined> {
    const have = this.registry.get(project, app);
    const source = this.#source;
    if (!source) return have;
    const key = appKey(project, app);
    const known = this.#current.get(key);
    // A run of a later app than the one this host heard of: its news is stale, ask again.
    if (acceptedFor && known?.appId && acceptedFor > known.appId) this.#current.delete(key);
    const want = this.#current.get(key);
    if (have && want && isVersion(have, want)) return have;
    let fetching = this.#fetching.get(key);
    if (!fetching) {
      fetching = this.#fetch(source, project, app, want).finally(() => this.#fetching.delete(key));
      this.#fetching.set(key, fetching);
    }
    return fetching;
  }

  /**
   * Whether run `runId`, accepted for the app of id `appId`, was accepted before the app this
   * host runs under the name was made, a later one (ids sort by time): its app was deleted and
   * another deployed since (docs/api.md). A run made after the later app is that app's, whatever
   * id it brings: the Worker keeps an app for up to 10 s, so a run sent right after a delete and
   * a deploy brings the deleted app's id.
   */
  isLaterApp(project: string, app: string, appId: string, runId: string): boolean {
    const known = this.#current.get(appKey(project, app))?.appId;
    if (known === undefined || known <= appId) return false;
    const acceptedAt = timeOfId(runId);
    const madeAt = timeOfId(known);
    return acceptedAt === undefined || madeAt === undefined || acceptedAt < madeAt;
  }

  async #fetch(
    source: BundleSource,
    project: string,
    app: string,
    known: Current | undefined,
  ): Promise<Deployment | undefined> {
    const have = this.registry.get(project, app);
    let want = known;
    try {
      want ??= await source.current(project, app);
    } catch (err) {
      if (have) return have; // the control plane cannot say now: what this host has
      throw err;
    }
    if (!want) return undefined; // no such app
    this.#note(project, app, want);
    if (have && isVersion(have, want)) return have;
    // Its deploy's trial ran here (pool/trials.ts): its files are here already, not fetched.
    const staged = want.digest
      ? await this.registry.commit(project, app, want.version, want.digest)
      : undefined;
    if (staged) {
      this.pool.deployed(staged);
      return staged;
    }
    const bundle = await source.bundle(project, app, want.version);
    if (!bundle) return this.registry.get(project, app); // replaced meanwhile: the next call
    // Checked against its digest where it is decoded and hashed anyway (a version before
    // digests has none).
    const digest = want.digest ?? undefined;
    const deployment = await this.registry.deploy({ project, app, ...bundle, digest });
    this.pool.deployed(deployment);
    return deployment;
  }
}

/**
 * Whether `have` is version `want`: its number and its files. An app deleted and deployed again
 * starts at version 1 again: by number alone, the host served the deleted app's code for ever.
 */
function isVersion(have: Deployment, want: Current): boolean {
  return have.version === want.version && (want.digest === null || want.digest === have.digest);
}
