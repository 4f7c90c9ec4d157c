/**
 * `POST /v4/{project}/{app}/{function}` on a managed-runtime app: calls the export, at once
 * (`200 {run_id, result, run_time_ms}`, or `500 {run_id, error}` when it throws) or in the
 * background (`?async=true`: `202 {run_id}`).
 */
import type { Context } from "hono";
import { notAllowedMessage } from "../../common/allowed-methods.ts";
import { functionInputOf } from "../../common/function-input.ts";
import { noFunction } from "../../common/no-function.ts";
import { ownStatusCode } from "../../common/protocol/runs.ts";
import { resolveApp } from "../auth.ts";
import type { WorkerEnv } from "../env.ts";
import { RunApiError } from "../errors.ts";
import { invokeOnHost } from "../host.ts";
import { answeredOnce, keyOfCall } from "../idempotency.ts";
import {
  accept,
  cappedBody,
  deliver,
  RUNLET_PARAMETERS,
  type RunCall,
  refuseUnknownQuery,
  reportingFailure,
  runCallOf,
} from "../run-call.ts";

type FunctionContext = Context<WorkerEnv, "/v4/:project/:app/:fn">;

/**
 * A function's input is JSON (an empty body is null) nested at most 1,000 deep: an async call's
 * is checked before it is accepted, as the host checks a sync call's, so a body that cannot be
 * an input is a 400 now rather than a run that fails later.
 */
function refuseUnlessJson(body: ArrayBuffer): void {
  const input = functionInputOf(body);
  if (!input.ok) throw new RunApiError(400, input.message);
}

/**
 * A managed function takes no query parameters of its own (its input is the body): any but
 * Runlet's is a mistake, refused rather than ignored (`?webhook_endpoint=…&Async=true` ran
 * synchronously, with no webhook).
 */
function refuseUnknownParameters(c: FunctionContext): void {
  refuseUnknownQuery(
    c,
    [...RUNLET_PARAMETERS],
    "a managed function takes async and webhookEndpoint; its input is the JSON body",
    { webhook_endpoint: "webhookEndpoint" },
  );
}

/**
 * A managed function's input is the JSON body as sent: a compressed one is refused, saying so
 * (it read as "request body is not valid UTF-8", the encoding unnamed).
 */
function refuseEncodedBody(c: FunctionContext): void {
  const encoding = c.req.header("content-encoding")?.trim().toLowerCase();
  if (!encoding || encoding === "identity") return;
  throw new RunApiError(
    415,
    `Content-Encoding ${encoding.slice(0, 32)} is not taken: send a managed function's JSON body uncompressed (up to 10 MiB)`,
  );
}

/**
 * An async call of a function the app's live version does not export: 404 now, as a sync call's
 * is, rather than 202 and a run that fails. Known only when its deploy's start check found the
 * functions; a kept answer about the app may predate a deploy, so it is asked again first.
 */
async function refuseUnknownFunction(c: FunctionContext, fn: string): Promise<void> {
  if (!c.var.app.functions || c.var.app.functions.includes(fn)) return;
  const { project, app } = c.req.param();
  const fresh = await resolveApp(c.env, c.var.caller, project, app, true);
  c.set("app", fresh);
  if (!fresh.functions || fresh.functions.includes(fn)) return;
  throw new RunApiError(404, noFunction(app, fn, fresh.functions));
}

export async function callFunction(c: FunctionContext) {
  refuseUnknownParameters(c);
  refuseEncodedBody(c);
  const call = runCallOf(c);
  let fn: string;
  try {
    fn = decodeURIComponent(c.req.param("fn"));
  } catch {
    throw new RunApiError(400, "the function name is not valid percent-encoding");
  }
  const body = await cappedBody(c);
  const key = await keyOfCall(c, call, fn, body);
  if (call.isAsync) {
    refuseUnlessJson(body);
    await refuseUnknownFunction(c, fn);
    return accept(c, call, fn, body, undefined, key);
  }
  return answeredOnce(c, call, key, () => runNow(c, call, fn, body));
}

/** A sync call: the function's answer, and its webhook's delivery handed to the run's shard. */
async function runNow(c: FunctionContext, call: RunCall, fn: string, body: ArrayBuffer) {
  const { project, app, runId } = call;
  const { replicaConcurrency: concurrency, capacity } = c.var.app.scaling;
  const { startTimeout } = c.var.app;
  const background = (work: Promise<unknown>) => c.executionCtx.waitUntil(work);
  const target = { project, app, fn, runId, concurrency, capacity, startTimeout, background };
  const outcome = await reportingFailure(c, call, fn, () => invokeOnHost(c.env, target, body));
  deliver(
    c,
    call,
    fn,
    outcome.ok
      ? { status: "success", result: outcome.result, run_time_ms: outcome.run_time_ms }
      : { status: "failure", error: outcome.error, run_time_ms: outcome.run_time_ms },
    outcome.host,
  );
  if (!outcome.ok) {
    const { error, run_time_ms } = outcome;
    return c.json({ run_id: call.runId, error: { message: error.message }, run_time_ms }, 500);
  }
  const { result, run_time_ms } = outcome;
  const status = ownStatusCode(result) ?? 200;
  // These carry no body (the Fetch standard refuses one): the status and X-Request-Id alone.
  if (status === 204 || status === 205 || status === 304) return c.body(null, status);
  return c.json({ run_id: call.runId, result, run_time_ms }, status as 200);
}

/**
 * Any other method or path of a managed app: 405, naming the one that works; a read or cancel
 * of something under `runs/` that is not a run id: 404 saying what a run id looks like. A run's
 * own path (`runs/{run_id}`, `…/deliveries`) under another method: 405 naming `allowed`, the
 * methods its routes take (until 2026-11-27 it said `Allow: POST`, a function's).
 */
export function notAFunctionCall(c: Context<WorkerEnv>, allowed: string[]): never {
  const project = c.req.param("project") as string;
  const app = c.req.param("app") as string;
  const { method, path } = c.req;
  const under = path.slice(`/v4/${project}/${app}/`.length);
  if (under.includes("/") && allowed.length > 0) {
    c.header("allow", allowed.join(", "));
    throw new RunApiError(405, notAllowedMessage(method, path, allowed));
  }
  if (under.startsWith("runs/") && (method === "GET" || method === "DELETE")) {
    const id = under.slice("runs/".length).slice(0, 60);
    throw new RunApiError(404, `no run '${id}': a run id is 'run_' and 26 characters`);
  }
  c.header("allow", "POST");
  throw new RunApiError(405, `'${app}' runs functions: POST /v4/${project}/${app}/{function}`);
}
