/**
 * `POST /internal/invoke/{project}/{app}/{fn}`: one synchronous call of an app's export. At
 * capacity it waits for a slot (`queueWaitMs`, first come first served), and leaves the queue
 * if its caller goes away meanwhile; a caller gone while it runs aborts the function's ctx.signal.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { noFunction } from "../../common/no-function.ts";
import type { Invocation } from "../../common/protocol/host.ts";
import { ownStatusCode } from "../../common/protocol/runs.ts";
import type { HostContext } from "../context.ts";
import { parseJsonBody, readBody } from "../http/body.ts";
import { deploymentOf, functionName, projectAndApp, runIdOf } from "../http/params.ts";
import { callerGone, sendError, sendJson } from "../http/respond.ts";
import { MAX_INVOKE_BODY_BYTES } from "../limits.ts";

export async function invokeFunction(
  req: IncomingMessage,
  res: ServerResponse,
  params: readonly string[],
  { versions, pool, limits, reports }: HostContext,
): Promise<void> {
  const names = projectAndApp(params);
  const { app } = names;
  const fn = functionName(params[2] ?? "");
  const runId = runIdOf(req);
  const payload = parseJsonBody(await readBody(req, MAX_INVOKE_BODY_BYTES));
  const deployment = await deploymentOf(
    versions,
    names,
    "managed",
    `app '${app}' uses the custom runtime: send requests to its own paths (/internal/http/...)`,
  );

  // A replica's failure (busy, timeout, …) is answered by its kind (http/errors.ts).
  // A caller gone while the call waits takes it out of the queue; gone while it runs, the
  // function's ctx.signal aborts (its slot stays taken until it returns).
  const gone = callerGone(res);
  const listed = { projectId: names.project, app, function: fn };
  const { outcome, runTimeMs } = await pool
    .call(deployment, { fn, payload, runId, signal: gone }, limits.callTimeoutMs, {
      signal: gone,
      started: () => reports.syncStarted(runId, listed),
    })
    .finally(() => reports.syncOver(runId));
  if (outcome.kind !== "not-found") {
    const status = outcome.kind === "returned" ? "success" : "failure";
    const error = outcome.kind === "threw" ? { error: outcome.message } : {};
    // A result's own status_code is the call's HTTP status: the runs index says it, as it says a
    // custom app's ("success (answered 404)"), where a 404 read as a plain success.
    const code = outcome.kind === "returned" ? ownStatusCode(outcome.value) : undefined;
    reports.ended(runId, {
      ...listed,
      status,
      runTimeMs,
      ...error,
      ...(code !== undefined ? { statusCode: code } : {}),
    });
  }
  switch (outcome.kind) {
    case "returned":
      return sendJson(res, 200, {
        ok: true,
        result: outcome.value,
        run_time_ms: runTimeMs,
      } satisfies Invocation);
    case "threw":
      return sendJson(res, 200, {
        ok: false,
        error: { message: outcome.message },
        run_time_ms: runTimeMs,
      } satisfies Invocation);
    case "not-found":
      return sendError(res, 404, noFunction(app, fn, outcome.exports));
  }
}
