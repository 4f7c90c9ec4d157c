/**
 * The run a request on `/v4/{project}/{app}/…` is about, in `c.var.runId`, and `X-Request-Id`
 * set to it on every answer — success or error (a refused token included), in one place, as
 * Hono's `request-id` middleware does for request ids. A read or a cancellation of a run
 * (`GET|HEAD|DELETE …/runs/{run_id}`, `POST …/runs/{run_id}/deliveries`) is about that run;
 * anything else is a run call: a new run. (A HEAD, the GET without its body, had a new id.)
 */
import { createMiddleware } from "hono/factory";
import { HEADER } from "../../common/consts.ts";
import { RUN_ID_SOURCE } from "../../common/ids.ts";
import type { WorkerEnv } from "../env.ts";
import { newRunId } from "../runs/shards.ts";

function stamp(res: Response, runId: string): Response {
  try {
    res.headers.set(HEADER.requestId, runId);
    return res;
  } catch {
    // An upstream's answer has immutable headers: answer a copy.
    const copy = new Response(res.body, res);
    copy.headers.set(HEADER.requestId, runId);
    return copy;
  }
}

/** `GET|DELETE /v4/{project}/{app}/runs/{run_id}`: a run's own URL. */
export const RUN_STATE = new RegExp(`^/v4/[^/]+/[^/]+/runs/(${RUN_ID_SOURCE})$`);
const DELIVERIES = new RegExp(`^/v4/[^/]+/[^/]+/runs/(${RUN_ID_SOURCE})/deliveries$`);

export const runId = createMiddleware<WorkerEnv>(async (c, next) => {
  const { method, path } = c.req;
  const about =
    method === "GET" || method === "HEAD" || method === "DELETE"
      ? RUN_STATE.exec(path)
      : method === "POST"
        ? DELIVERIES.exec(path)
        : null;
  const id = about?.[1] ?? newRunId();
  c.set("runId", id);
  await next();
  // A run call with an idempotency key may have moved to another id (worker/idempotency.ts).
  c.res = stamp(c.res, c.var.runId ?? id);
});
