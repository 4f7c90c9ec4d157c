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
  /** Forgets one version's bundle (a version long replaced); one not kept is fine. */
  forget(key: BundleKey): Promise<void>;
}

/**
 * Bundles kept per app: the newest versions. A host fetches only an app's current version, so
 * an older bundle is of no use, and without a bound each deploy of a member would take more of
 * the control plane's disk for good (20 MiB each at most).
 */
export const KEPT_BUNDLES = 10;

/** Where a version's bundle is kept, below the store's root. */
export const bundleName = ({ project, app, version, digest }: BundleKey) =>
  `${project}/${app}/v${version}${digest ? `-${digest}` : ""}.json`;

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
      for (let cursor: string | undefined; ; ) {
        const listed = await bucket.list({ prefix: `${project}/${app}/`, cursor });
        if (listed.objects.length > 0) await bucket.delete(listed.objects.map((o) => o.key));
        if (!listed.truncated) return;
        cursor = listed.cursor;
      }
    },
  };
}
