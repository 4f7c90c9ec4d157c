/**
 * The run API's errors: `{message, code}` JSON (common/errors.ts), with `run_id` once the request
 * is about a run. One class, one renderer (`app.onError`).
 */
import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { codeOf, type ErrorCode } from "../common/errors.ts";
import type { WorkerEnv } from "./env.ts";

export class RunApiError extends Error {
  readonly code: ErrorCode;
  /**
   * The runtime host the run failed at, once it reached one (`id`: its registry id, null for
   * RUNTIME_HOST_URL): for the runs index and the run's row.
   */
  host?: { id: string | null; url: string };
  /** How long the run ran on its host before it failed there (its process died): for the index. */
  runTimeMs?: number;
  /**
   * The run the refusal is about, when that is not the request's own: an Idempotency-Key's run
   * (still running, its answer not kept, or the key used for another request). Its id is then
   * the answer's `run_id` and `X-Request-Id`, which before named the refused request's new id,
   * a run that never was (`runlet status` of it: 404).
   */
  runId?: string;
  /** The host refused the call's input before anything ran: no run for the index. */
  beforeRun?: boolean;
  constructor(
    readonly status: ContentfulStatusCode,
    message: string,
  ) {
    super(message);
    this.code = codeOf(status);
  }
}

/** The Worker's one error renderer: never a stack or an internal path. */
export function renderError(err: Error, c: Context<WorkerEnv>) {
  const known = err instanceof RunApiError;
  if (known && err.runId) c.set("runId", err.runId); // X-Request-Id too (middleware/run-id.ts)
  const runId = c.var.runId;
  if (!known) console.error("[worker] unexpected error:", err);
  const body = known
    ? { message: err.message, code: err.code }
    : { message: "internal error", code: "internal" as const };
  return c.json({ ...body, ...(runId ? { run_id: runId } : {}) }, known ? err.status : 500);
}
