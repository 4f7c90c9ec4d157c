import type { Hono } from "hono";
import { HEADER } from "../../common/consts.ts";
import { newId } from "../../common/ids.ts";
import { resolveApp, verifyCaller } from "../auth.ts";
import type { WorkerEnv } from "../env.ts";
import { errorResponse, RunApiError } from "../errors.ts";
import { invokeOnHost } from "../host.ts";
import { reportRun } from "../runs-index.ts";

/** Largest request body a run accepts. */
export const MAX_RUN_BODY_BYTES = 10 * 1024 * 1024;

/** A result object's numeric `status_code` sets the HTTP status of a synchronous run. */
function statusOf(result: unknown): number {
  if (result && typeof result === "object" && "status_code" in result) {
    const code = (result as { status_code: unknown }).status_code;
    if (typeof code === "number" && Number.isInteger(code) && code >= 200 && code <= 599)
      return code;
  }
  return 200;
}

/** `POST /v4/{project}/{app}/{function}`: a synchronous run of a managed-runtime app. */
export function registerRun(app: Hono<WorkerEnv>) {
  // A WebSocket handshake (a GET with Upgrade) on any run path gets a clear refusal, not a 404.
  app.use("/v4/*", async (c, next) => {
    if (c.req.header("upgrade")?.toLowerCase() !== "websocket") return next();
    return errorResponse(
      c,
      new RunApiError(
        400,
        "WebSocket connections are not supported; call the run path with an HTTP POST",
      ),
    );
  });
  app.post("/v4/:project/:app/:fn", async (c) => {
    const startedAt = Date.now();
    const runId = newId("run");
    // Set once the call reaches the runtime host: from then on it is a run, in the runs index.
    let ran: ((status: "success" | "failure", runTimeMs: number | null) => void) | undefined;
    try {
      if (c.req.header("upgrade")?.toLowerCase() === "websocket") {
        throw new RunApiError(
          400,
          "WebSocket connections are not supported; call the run path with an HTTP POST",
        );
      }
      const { project, app: appName, fn } = c.req.param();
      const caller = await verifyCaller(c.env, c.req.header("authorization"));
      await resolveApp(c.env, caller, project, appName);
      if (c.req.query("async") !== undefined || c.req.query("webhookEndpoint") !== undefined) {
        throw new RunApiError(
          400,
          "async runs and webhookEndpoint are not available in this version yet",
        );
      }
      const length = Number(c.req.header("content-length") ?? 0);
      if (length > MAX_RUN_BODY_BYTES)
        throw new RunApiError(413, "the request body is larger than 10 MiB");
      const body = await c.req.arrayBuffer();
      if (body.byteLength > MAX_RUN_BODY_BYTES)
        throw new RunApiError(413, "the request body is larger than 10 MiB");

      ran = (status, runTimeMs) =>
        c.executionCtx.waitUntil(
          reportRun(c.env, runId, {
            projectId: project,
            app: appName,
            function: fn,
            async: false,
            status,
            createdAt: startedAt,
            finishedAt: Date.now(),
            runTimeMs,
          }),
        );
      const outcome = await invokeOnHost(c.env, { project, app: appName, fn, runId }, body);
      c.header(HEADER.requestId, runId);
      ran(outcome.ok ? "success" : "failure", outcome.run_time_ms);
      if (outcome.ok) {
        return c.json(
          { run_id: runId, result: outcome.result, run_time_ms: outcome.run_time_ms },
          statusOf(outcome.result) as 200,
        );
      }
      return c.json(
        {
          run_id: runId,
          error: { message: outcome.error.message },
          run_time_ms: outcome.run_time_ms,
        },
        500,
      );
    } catch (err) {
      ran?.("failure", null);
      return errorResponse(c, err, runId);
    }
  });
}
