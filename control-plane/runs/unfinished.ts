/**
 * An app's async queue as its users see it: how many of its async runs wait (`queued`) and how
 * many run (`running`), counted over the runs index. The index hears of a run's acceptance, its
 * start and its end from the run's shard within about 200 ms of each, even across a crash, so
 * the count is the run store's with that delay. Only the app's own runs count: those made since
 * it was created (runs of an earlier app of the name, deleted since, are not its).
 *
 * Read through the partial index `runs_unfinished` (schema.ts), which holds only async runs not
 * ended: the count reads those rows and no others, however many runs the app has had. Its
 * terms are written out (not bound) so that SQLite sees the query stays within that index.
 */
import { and, eq, gte, sql } from "drizzle-orm";
import type { Database } from "../db/index.ts";
import { apps, runs } from "../db/schema.ts";

export interface UnfinishedRuns {
  queued: number;
  running: number;
}

const UNFINISHED = sql`${runs.async} = 1 and ${runs.status} in ('queued', 'running')`;

function tally(rows: Array<{ status: string; n: number }>): UnfinishedRuns {
  const counts = { queued: 0, running: 0 };
  for (const r of rows)
    if (r.status === "queued" || r.status === "running") counts[r.status] += r.n;
  return counts;
}

const count = sql<number>`count(*)`.mapWith(Number);

/** One app's async runs waiting and running (the app made at `createdAt`, ms). */
export async function unfinishedRunsOf(
  db: Database,
  projectId: string,
  app: { name: string; createdAt: number },
): Promise<UnfinishedRuns> {
  const rows = await db
    .select({ status: runs.status, n: count })
    .from(runs)
    .where(
      and(
        eq(runs.projectId, projectId),
        eq(runs.app, app.name),
        UNFINISHED,
        gte(runs.createdAt, app.createdAt),
      ),
    )
    .groupBy(runs.status);
  return tally(rows);
}

/** The same for every app of the project that has any, by app name (one query). */
export async function unfinishedRunsByApp(
  db: Database,
  projectId: string,
): Promise<Map<string, UnfinishedRuns>> {
  const rows = await db
    .select({ app: runs.app, status: runs.status, n: count })
    .from(runs)
    .innerJoin(apps, and(eq(apps.projectId, runs.projectId), eq(apps.name, runs.app)))
    .where(and(eq(runs.projectId, projectId), UNFINISHED, gte(runs.createdAt, apps.createdAt)))
    .groupBy(runs.app, runs.status);
  const byApp = new Map<string, Array<{ status: string; n: number }>>();
  for (const r of rows) byApp.set(r.app, [...(byApp.get(r.app) ?? []), r]);
  return new Map([...byApp].map(([app, counted]) => [app, tally(counted)]));
}

/** What an app with no unfinished runs has. */
export const NO_RUNS: UnfinishedRuns = Object.freeze({ queued: 0, running: 0 });
