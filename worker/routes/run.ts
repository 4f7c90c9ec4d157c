import type { Context, Hono } from "hono";
import { HEADER } from "../../common/consts.ts";
import { newId } from "../../common/ids.ts";
import { resolveApp, verifyCaller } from "../auth.ts";
import type { WorkerEnv } from "../env.ts";
import { errorResponse, RunApiError } from "../errors.ts";
import { forwardToHost, invokeOnHost } from "../host.ts";
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

/**
 * `/v4/{project}/{app}/…`: a synchronous run. Managed runtime: `POST /{function}`. Custom
 * runtime: any method and path, forwarded to the app as it came.
 */
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
  app.all("/v4/:project/:app", run);
  app.all("/v4/:project/:app/*", run);
}

async function run(c: Context<WorkerEnv>) {
  const startedAt = Date.now();
  const runId = newId("run");
  // Set once the call reaches the runtime host: from then on it is a run, in the runs index.
  let ran: ((status: "success" | "failure", runTimeMs: number | null) => void) | undefined;
  try {
    const { project, app: appName } = c.req.param() as { project: string; app: string };
    const url = new URL(c.req.url);
    // The path after the app exactly as sent (still percent-encoded), and the query.
    const rest = url.pathname.slice(`/v4/${project}/${appName}`.length);
    const caller = await verifyCaller(c.env, c.req.header("authorization"));
    const resolved = await resolveApp(c.env, caller, project, appName);
    if (c.req.query("async") !== undefined || c.req.query("webhookEndpoint") !== undefined) {
      throw new RunApiError(
        400,
        "async runs and webhookEndpoint are not available in this version yet",
      );
    }
    const length = Number(c.req.header("content-length") ?? 0);
    if (length > MAX_RUN_BODY_BYTES)
      throw new RunApiError(413, "the request body is larger than 10 MiB");
    const report = (fn: string) => (status: "success" | "failure", runTimeMs: number | null) =>
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

    if (resolved.runtime === "custom") {
      // Recorded by method and path, never the query (it may carry secrets).
      const path = rest || "/";
      ran = report(`${c.req.method} ${path}`);
      const answer = await forwardToHost(
        c.env,
        { project, app: appName, pathAndQuery: `${path}${url.search}`, runId },
        c.req.raw,
      );
      ran(answer.status < 500 ? "success" : "failure", Date.now() - startedAt);
      const headers = new Headers(answer.headers);
      headers.set(HEADER.requestId, runId);
      return new Response(answer.body, { status: answer.status, headers });
    }

    const fn = /^\/([^/]+)$/.exec(rest)?.[1];
    if (c.req.method !== "POST" || fn === undefined) {
      c.header("allow", "POST");
      throw new RunApiError(
        405,
        `'${appName}' runs functions: POST /v4/${project}/${appName}/{function}`,
      );
    }
    let name: string;
    try {
      name = decodeURIComponent(fn);
    } catch {
      throw new RunApiError(400, "the function name is not valid percent-encoding");
    }
    const body = await c.req.arrayBuffer();
    if (body.byteLength > MAX_RUN_BODY_BYTES)
      throw new RunApiError(413, "the request body is larger than 10 MiB");
    ran = report(name);
    const outcome = await invokeOnHost(c.env, { project, app: appName, fn: name, runId }, body);
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
}
