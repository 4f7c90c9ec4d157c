/**
 * Async runs on the host: `POST /internal/async/{project}/{app}/{fn}` starts one of a function
 * (202), `* /internal/async-http/{project}/{app}/{path…}` one request to a custom app (202),
 * `GET /internal/runs/{runId}` tells its state, `DELETE /internal/runs/{runId}` cancels it.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { HEADER } from "../../common/consts.ts";
import type { HostContext } from "../context.ts";
import { parseJsonBody, readBody } from "../http/body.ts";
import { HttpError } from "../http/errors.ts";
import { sendJson } from "../http/respond.ts";
import { MAX_INVOKE_BODY_BYTES } from "../limits.ts";
import { appTarget, forwardable } from "./forward.ts";
import { functionName, runIdOf } from "./invoke.ts";
import { deploymentOf, projectAndApp } from "./params.ts";

function callbackOf(req: IncomingMessage): string | undefined {
  // Where the host reports the run's end (the Worker's internal route); optional.
  const raw = req.headers[HEADER.callbackUrl.toLowerCase()];
  if (raw === undefined) return undefined;
  const url = typeof raw === "string" && URL.canParse(raw) ? new URL(raw) : undefined;
  if (!url || (url.protocol !== "http:" && url.protocol !== "https:")) {
    throw new HttpError(400, `the ${HEADER.callbackUrl} header must be an absolute http(s) URL`);
  }
  return url.href;
}

export async function submitRun(
  req: IncomingMessage,
  res: ServerResponse,
  params: readonly string[],
  { registry, runs }: HostContext,
): Promise<void> {
  const names = projectAndApp(params);
  const fn = functionName(params[2] ?? "");
  const runId = runIdOf(req);
  const callbackUrl = callbackOf(req);
  const payload = parseJsonBody(await readBody(req, MAX_INVOKE_BODY_BYTES));
  const deployment = deploymentOf(
    registry,
    names,
    "managed",
    `app '${names.app}' uses the custom runtime: async runs call functions`,
  );
  const run = runs.submit(deployment, { fn, payload, runId }, callbackUrl);
  if (!run) throw new HttpError(409, `run '${runId}' exists already`);
  sendJson(res, 202, run);
}

/** A custom app's async run: the request as it came (less the host's own headers), buffered. */
export async function submitHttpRun(
  req: IncomingMessage,
  res: ServerResponse,
  params: readonly string[],
  { registry, runs }: HostContext,
): Promise<void> {
  const names = projectAndApp(params);
  const runId = runIdOf(req);
  const callbackUrl = callbackOf(req);
  const deployment = deploymentOf(
    registry,
    names,
    "custom",
    `app '${names.app}' uses the managed runtime: async runs of it call functions`,
  );
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(forwardable(req.headers))) {
    if (name !== HEADER.callbackUrl.toLowerCase() && name !== "content-length")
      headers[name] = Array.isArray(value) ? value.join(", ") : String(value);
  }
  const body = await readBody(req, MAX_INVOKE_BODY_BYTES);
  const http = {
    method: req.method ?? "GET",
    pathAndQuery: appTarget(req, `/internal/async-http/${params[0]}/${params[1]}`),
    headers,
    body,
  };
  const run = runs.submit(deployment, { runId, http }, callbackUrl);
  if (!run) throw new HttpError(409, `run '${runId}' exists already`);
  sendJson(res, 202, run);
}

export async function getRun(
  _req: IncomingMessage,
  res: ServerResponse,
  params: readonly string[],
  { runs }: HostContext,
): Promise<void> {
  const run = runs.get(params[0] ?? "");
  if (!run) throw new HttpError(404, `no run '${params[0]}' on this host`);
  sendJson(res, 200, run);
}

export async function cancelRun(
  _req: IncomingMessage,
  res: ServerResponse,
  params: readonly string[],
  { runs }: HostContext,
): Promise<void> {
  const run = runs.cancel(params[0] ?? "");
  if (!run) throw new HttpError(404, `no run '${params[0]}' on this host`);
  if (run.status !== "cancelled")
    throw new HttpError(409, `run '${run.runId}' has ended: ${run.status}`);
  sendJson(res, 200, run);
}
