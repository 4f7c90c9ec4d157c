/**
 * A run as the runs index has it, read from the control plane with the caller's token, in the
 * shape of the run API's view: for a run without a row in the run store (a sync run without a
 * webhook), and for an Idempotency-Key whose sync run's answer was never kept.
 */
import { CONTROL_PLANE_UNREACHABLE, controlPlaneAnswered } from "../common/protocol/no-run.ts";
import { controlPlaneFetch } from "./control-plane.ts";
import type { Env } from "./env.ts";
import { RunApiError } from "./errors.ts";

/** A run without a row in the run store (a sync run without a webhook), from the runs index. */
export async function indexedRun(env: Env, token: string, project: string, runId: string) {
  let res: Response;
  try {
    res = await controlPlaneFetch(env, `/v2/projects/${project}/runs/${runId}`, {
      headers: { authorization: `Bearer ${token}` },
    });
  } catch {
    throw new RunApiError(502, CONTROL_PLANE_UNREACHABLE);
  }
  if (res.status === 404) return undefined;
  if (!res.ok) throw new RunApiError(502, controlPlaneAnswered(res.status));
  const row = (await res.json()) as {
    id: string;
    app: string;
    function: string;
    async: boolean;
    status: string;
    createdAt: string;
    finishedAt: string | null;
    runTimeMs: number | null;
    host?: string | null;
    error?: { message: string };
    statusCode?: number;
  };
  return {
    run_id: row.id,
    project,
    app: row.app,
    function: row.function,
    async: row.async,
    status: row.status,
    created_at: row.createdAt,
    started_at: startOf(row),
    finished_at: row.finishedAt,
    run_time_ms: row.runTimeMs,
    host: row.host ?? null,
    ...(row.error ? { error: { message: row.error.message } } : {}),
    ...(row.statusCode !== undefined ? { status_code: row.statusCode } : {}),
  };
}

/**
 * The index keeps no start: an ended run's is its end less its run time, not before it was
 * created (a sync call that waited 2.6 s for a replica showed `started_at` as `created_at`). A
 * run still running shows its creation.
 */
function startOf(row: { createdAt: string; finishedAt: string | null; runTimeMs: number | null }) {
  const created = Date.parse(row.createdAt);
  const finished = row.finishedAt === null ? Number.NaN : Date.parse(row.finishedAt);
  if (row.runTimeMs === null || !Number.isFinite(finished) || !Number.isFinite(created))
    return row.createdAt;
  return new Date(Math.max(created, finished - row.runTimeMs)).toISOString();
}
