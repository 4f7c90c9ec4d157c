/**
 * Synchronous runs listed `running` whose end can no longer come. A runtime host lists a sync
 * run still on its replica after a second (runtime-host/run-reports.ts), and its end replaces
 * that; but a host that restarts has forgotten its calls, and when the Worker dies with it
 * nobody reports how they ended. Without this they would be listed running for good.
 *
 * - A host that registers again after a restart: its sync runs of the last hour listed running
 *   end `failure` at once, saying so (`hostRestarted`).
 * - Any other (a host that never came back): once the Worker's own wait for a sync call is over
 *   for an app of the longest start (`SYNC_LOST_MS`, about 67 minutes; a Worker that lived
 *   answered the caller 504 and reported it itself), the lists and a run's read end it
 *   `failure` as they come upon it (`settleLostSync`).
 */
import { and, eq, gte, inArray } from "drizzle-orm";
import { longestHostAnswerMs, MAX_START_TIMEOUT_S } from "../../common/app-limits.ts";
import { idsFrom } from "../../common/ids.ts";
import type { Database } from "../db/index.ts";
import { runs } from "../db/schema.ts";

/** Past this after its creation, a sync run still listed running has lost its end. */
export const SYNC_LOST_MS = longestHostAnswerMs(MAX_START_TIMEOUT_S) + 60_000;

export const RESTARTED =
  "the runtime host restarted during the call, so how it ended is not known (its caller got an error or nothing)";
export const LOST =
  "the call's end never reached the runs index (its runtime host and the Worker stopped during it), so how it ended is not known";

const syncRunning = and(eq(runs.async, false), eq(runs.status, "running"));

/** The host `hostId` registered anew: the sync runs it had on a replica are over. */
export function hostRestarted(db: Database, hostId: string, now = Date.now()) {
  return db
    .update(runs)
    .set({ status: "failure", finishedAt: now, error: RESTARTED })
    .where(
      and(gte(runs.id, idsFrom("run", now - SYNC_LOST_MS)), eq(runs.host, hostId), syncRunning),
    );
}

type RunRow = typeof runs.$inferSelect;

const lost = (row: RunRow, now: number) =>
  !row.async && row.status === "running" && row.createdAt < now - SYNC_LOST_MS;

/** `rows` as they read once each lost sync run among them is ended (written, then shown). */
export async function settleLostSync(db: Database, rows: RunRow[], now = Date.now()) {
  const ids = rows.filter((row) => lost(row, now)).map((row) => row.id);
  if (ids.length === 0) return rows;
  await db
    .update(runs)
    .set({ status: "failure", finishedAt: now, error: LOST })
    .where(and(inArray(runs.id, ids), syncRunning));
  const settled = { status: "failure" as const, finishedAt: now, error: LOST };
  return rows.map((row) => (ids.includes(row.id) ? { ...row, ...settled } : row));
}
