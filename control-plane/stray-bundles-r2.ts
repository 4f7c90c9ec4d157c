/**
 * Bundles no deployment records, dropped from the R2 bucket of the control plane on Workers:
 * what a deploy or a delete cut short left there (stray-bundles.ts says how; a Worker is cut
 * short by a redeploy of it, or by Cloudflare's limits). A Worker has no start to sweep at, so
 * the control plane's `scheduled` handler (worker.ts, its cron in wrangler.toml) calls this.
 *
 * Unlike at a Node start, a deploy or a delete may be under way in another isolate: a bundle
 * its deploy has kept but not yet recorded is no stray. Only objects older than `STRAY_AGE_MS`
 * are looked at. A delete under way is no harm: its rows are gone, and it removes the same
 * objects.
 *
 * Each run does bounded work (`SWEEP_LIMITS`) and leaves the key it stopped after in the
 * object `SWEEP_MARK`, where the next run goes on: a bucket of any size is covered, a few
 * thousand objects an hour, and a run never lasts long.
 */
import { versionOfName } from "./bundles.ts";
import type { Database } from "./db/index.ts";
import { isStray, recordedNames } from "./recorded-bundles.ts";

/**
 * How old an unrecorded bundle must be to be a stray: a day. A deploy writes the bundle before
 * its start check, which asks the hosts in turn, each for at most its head (60 s), the app's
 * `start_timeout` (30 minutes at most: MAX_START_TIMEOUT_S) and a margin (60 s): about 32
 * minutes a host (hosts/start.ts). A deploy still under way a day later would have had some 45
 * hosts each fail at its limit; a stray kept a day longer costs only its storage.
 */
export const STRAY_AGE_MS = 24 * 60 * 60 * 1000;

/** What one run may do at most. */
export interface SweepLimits {
  /** R2 list pages read (`pageSize` keys each). */
  pages: number;
  pageSize: number;
  /** Apps whose recorded versions are read: one D1 query each. */
  apps: number;
}

/**
 * 5 pages of 1,000 keys (R2's most a list gives), a delete each, and 40 apps: below the 50 D1
 * queries an invocation may make on Workers Free, and a few seconds' work.
 */
export const SWEEP_LIMITS: SweepLimits = { pages: 5, pageSize: 1_000, apps: 40 };

/**
 * The object that holds the key the last run stopped after. One part, no `/`: never a bundle's
 * key (`{project}/{app}/{name}`, bundles.ts), so no sweep or delete takes it for one.
 */
export const SWEEP_MARK = ".stray-bundles-sweep";

/**
 * Removes the objects of `bucket` that are bundles no deployment records and were uploaded over
 * `STRAY_AGE_MS` before `now`, from where the last run stopped; says which it removed.
 */
export async function dropStrayR2Bundles(
  db: Database,
  bucket: R2Bucket,
  now: number,
  limits: SweepLimits = SWEEP_LIMITS,
): Promise<string[]> {
  const removed: string[] = [];
  const recorded = new Map<string, Set<string>>();
  let after = (await (await bucket.get(SWEEP_MARK))?.text()) || undefined;
  for (let page = 0; page < limits.pages; page++) {
    const listed = await bucket.list({ startAfter: after, limit: limits.pageSize });
    const strays: string[] = [];
    let full = false;
    for (const object of listed.objects) {
      const bundle = bundleOf(object.key);
      if (bundle && now - object.uploaded.getTime() > STRAY_AGE_MS) {
        const folder = `${bundle.project}/${bundle.app}`;
        let names = recorded.get(folder);
        if (!names) {
          // Out of queries: the next run starts at this key.
          if (recorded.size >= limits.apps) {
            full = true;
            break;
          }
          names = await recordedNames(db, bundle.project, bundle.app);
          recorded.set(folder, names);
        }
        if (isStray(bundle.name, names)) strays.push(object.key);
      }
      after = object.key;
    }
    if (strays.length > 0) await bucket.delete(strays);
    removed.push(...strays);
    if (full) break;
    if (!listed.truncated) {
      // The whole bucket is seen: the next run starts again at its first key.
      after = undefined;
      break;
    }
  }
  if (after) await bucket.put(SWEEP_MARK, after);
  else await bucket.delete(SWEEP_MARK);
  return removed;
}

/** A key as the store names a bundle (`{project}/{app}/{name}`, bundles.ts), or undefined. */
function bundleOf(key: string) {
  const [project, app, name, ...more] = key.split("/");
  if (!project || !app || !name || more.length > 0) return undefined;
  return versionOfName(name) === undefined ? undefined : { project, app, name };
}
