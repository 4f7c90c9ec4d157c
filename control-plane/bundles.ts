/**
 * Where the control plane keeps each app version's bundle for the runtime hosts to fetch when
 * they first need it (`GET /internal/bundles/{project}/{app}/{version}`, docs/hosts.md): files
 * under RUNLET_HOME on Node (bundles-file.ts), an R2 bucket on Workers. A version's bundle is
 * written once, before the deployment row that names it, under its number and its digest: two
 * deploys that took the same number at once (two isolates, two processes) write apart, and the
 * one the database records is the one hosts get.
 */
import type { DeployRequest } from "../common/protocol/deploy.ts";

export interface BundleKey {
  project: string;
  app: string;
  version: number;
  /** The bundle's digest; none: the name of bundles kept before digests named them. */
  digest?: string | null;
}

export interface BundleStore {
  /** Keeps the version's bundle (`{version, config, files}`, as JSON). */
  put(key: BundleKey, bundle: DeployRequest): Promise<void>;
  /** The version's bundle as JSON text, or undefined. */
  get(key: BundleKey): Promise<string | undefined>;
  /** Forgets every version of the app. */
  remove(project: string, app: string): Promise<void>;
  /** Forgets one version's bundle (a deploy's that was not recorded); one not kept is fine. */
  forget(key: BundleKey): Promise<void>;
  /**
   * Forgets every bundle of the app's versions up to `version` (versions long replaced),
   * whatever digest names them: the one recorded, and any a deploy that failed left behind.
   */
  forgetUpTo(project: string, app: string, version: number): Promise<void>;
}

/**
 * Bundles kept per app: the newest versions. A host fetches only an app's current version, so
 * an older bundle is of no use, and without a bound each deploy of a member would take more of
 * the control plane's disk for good (20 MiB each at most).
 */
export const KEPT_BUNDLES = 10;

/**
 * Whether `version`'s bundle is kept while `live` is the app's version: among the newest
 * KEPT_BUNDLES (each deploy past the tenth forgets the older ones: apps-deploy-version.ts).
 */
export const isKept = (version: number, live: number) => version > live - KEPT_BUNDLES;

/**
 * A recorded version's bundle as JSON text, or undefined: under its digest, or under its number
 * alone when it was kept before digests named bundles.
 */
export async function keptBundle(
  store: BundleStore,
  key: BundleKey,
  digest: string | null,
): Promise<string | undefined> {
  return (digest ? await store.get({ ...key, digest }) : undefined) ?? store.get(key);
}

/** Where a version's bundle is kept, below the store's root. */
export const bundleName = ({ project, app, version, digest }: BundleKey) =>
  `${project}/${app}/v${version}${digest ? `-${digest}` : ""}.json`;

/**
 * The version a bundle's name (below its app's folder) is of, or undefined for another name: a
 * file store's part being written (`.{random}.tmp`) counts as its version's.
 */
export function versionOfName(name: string): number | undefined {
  const match = /^v([0-9]+)(?:-[0-9a-f]+)?\.json(?:\.[0-9a-f]+\.tmp)?$/.exec(name);
  return match ? Number(match[1]) : undefined;
}

/** The names among `names` (below an app's folder) of bundles of versions up to `version`. */
export const namesUpTo = (names: string[], version: number) =>
  names.filter((name) => (versionOfName(name) ?? Number.POSITIVE_INFINITY) <= version);

/** The control plane on Workers: an R2 bucket. */
export function r2Bundles(bucket: R2Bucket): BundleStore {
  return {
    async put(key, bundle) {
      await bucket.put(bundleName(key), JSON.stringify(bundle), {
        httpMetadata: { contentType: "application/json" },
      });
    },
    async get(key) {
      return (await bucket.get(bundleName(key)))?.text();
    },
    async forget(key) {
      await bucket.delete(bundleName(key));
    },
    async remove(project, app) {
      await removeListed(bucket, `${project}/${app}/`, (keys) => keys);
    },
    async forgetUpTo(project, app, version) {
      const prefix = `${project}/${app}/`;
      await removeListed(bucket, prefix, (keys) =>
        namesUpTo(
          keys.map((key) => key.slice(prefix.length)),
          version,
        ).map((name) => prefix + name),
      );
    },
  };
}

/** Deletes the objects under `prefix` that `pick` keeps of each listing. */
async function removeListed(bucket: R2Bucket, prefix: string, pick: (keys: string[]) => string[]) {
  for (let cursor: string | undefined; ; ) {
    const listed = await bucket.list({ prefix, cursor });
    const keys = pick(listed.objects.map((o) => o.key));
    if (keys.length > 0) await bucket.delete(keys);
    if (!listed.truncated) return;
    cursor = listed.cursor;
  }
}
