import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { HEADER } from "../common/consts.ts";

/** An error on the run API: `{message}` JSON with the run id when one was assigned. */
export class RunApiError extends Error {
  constructor(
    readonly status: ContentfulStatusCode,
    message: string,
  ) {
    super(message);
  }
}

export function errorResponse(c: Context, err: unknown, runId?: string) {
  if (runId) c.header(HEADER.requestId, runId);
  if (err instanceof RunApiError) {
    return c.json({ message: err.message, ...(runId ? { run_id: runId } : {}) }, err.status);
  }
  console.error("[worker] unexpected error:", err);
  return c.json({ message: "internal error", ...(runId ? { run_id: runId } : {}) }, 500);
}
