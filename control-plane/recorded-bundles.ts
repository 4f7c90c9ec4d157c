/**
 * Which of an app's bundle names a deployment row names: what a sweep of bundles no version
 * records (stray-bundles.ts for Node's files at the start, stray-bundles-r2.ts for the R2 bucket
 * on Workers) keeps. One rule for both stores, so neither drops what the other would keep.
 */
import { and, eq } from "drizzle-orm";
import { versionOfName } from "./bundles.ts";
import type { Database } from "./db/index.ts";
import { apps, deployments } from "./db/schema.ts";

/** The names (below the app's folder) of the bundles of the app's recorded versions. */
export async function recordedNames(
  db: Database,
  project: string,
  app: string,
): Promise<Set<string>> {
  const recorded = await db
    .select({ version: deployments.version, digest: deployments.digest })
    .from(deployments)
    .innerJoin(apps, eq(apps.id, deployments.appId))
    .where(and(eq(apps.projectId, project), eq(apps.name, app)));
  // A recorded version's bundle is kept under its digest, or, kept before digests named
  // bundles, under its number alone (bundles.ts, keptBundle).
  const named = new Set<string>();
  for (const { version, digest } of recorded) {
    named.add(`v${version}.json`);
    if (digest) named.add(`v${version}-${digest}.json`);
  }
  return named;
}

/**
 * Whether `name` (below an app's folder) is a bundle's that no recorded version has. A name
 * that is no bundle's is nothing the store wrote: it is left alone.
 */
export const isStray = (name: string, recorded: ReadonlySet<string>) =>
  versionOfName(name) !== undefined && !recorded.has(name);
