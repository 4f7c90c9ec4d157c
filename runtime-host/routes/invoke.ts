/**
 * `POST /internal/invoke/{project}/{app}/{fn}`: one synchronous call of an app's export. At
 * capacity it waits for a slot (`queueWaitMs`, first come first served), and leaves the queue
 * if its caller goes away meanwhile.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { HEADER } from "../../common/consts.ts";
import type { HostContext } from "../context.ts";
import { parseJsonBody, readBody } from "../http/body.ts";
import { HttpError } from "../http/errors.ts";
import { closedSignal, sendError, sendJson } from "../http/respond.ts";
import { MAX_INVOKE_BODY_BYTES } from "../limits.ts";
import { deploymentOf, projectAndApp } from "./params.ts";

const MAX_FN_LENGTH = 256;
const MAX_RUN_ID_LENGTH = 128;

export function functionName(raw: string): string {
  let fn: string;
  try {
    fn = decodeURIComponent(raw);
  } catch {
    throw new HttpError(400, "the function name is not valid percent-encoding");
  }
  if (fn.length > MAX_FN_LENGTH) {
    throw new HttpError(400, `function names are at most ${MAX_FN_LENGTH} characters`);
  }
  return fn;
}

export function runIdOf(req: IncomingMessage): string {
  const runId = req.headers[HEADER.runId.toLowerCase()];
  if (typeof runId !== "string" || runId.trim() === "") {
    throw new HttpError(400, `the ${HEADER.runId} header is required`);
  }
  if (runId.length > MAX_RUN_ID_LENGTH) {
    throw new HttpError(400, `the ${HEADER.runId} header is longer than ${MAX_RUN_ID_LENGTH}`);
  }
  return runId.trim();
}

export async function invokeFunction(
  req: IncomingMessage,
  res: ServerResponse,
  params: readonly string[],
  { registry, pool, limits, reports }: HostContext,
): Promise<void> {
  const names = projectAndApp(params);
  const { app } = names;
  const fn = functionName(params[2] ?? "");
  const runId = runIdOf(req);
  const payload = parseJsonBody(await readBody(req, MAX_INVOKE_BODY_BYTES));
  const deployment = deploymentOf(
    registry,
    names,
    "managed",
    `app '${app}' uses the custom runtime: send requests to its own paths (/internal/http/...)`,
  );

  // A replica's failure (busy, timeout, …) is answered by its kind (http/errors.ts).
  const { outcome, runTimeMs } = await pool.call(
    deployment,
    { fn, payload, runId },
    limits.callTimeoutMs,
    { signal: closedSignal(res) },
  );
  if (outcome.kind !== "not-found") {
    const status = outcome.kind === "returned" ? "success" : "failure";
    reports.ended(runId, { projectId: names.project, app, function: fn, status, runTimeMs });
  }
  switch (outcome.kind) {
    case "returned":
      return sendJson(res, 200, { ok: true, result: outcome.value, run_time_ms: runTimeMs });
    case "threw":
      return sendJson(res, 200, {
        ok: false,
        error: { message: outcome.message },
        run_time_ms: runTimeMs,
      });
    case "not-found":
      return sendError(res, 404, `app '${app}' has no function '${fn}'`);
  }
}
