/**
 * Async runs on the host: `POST /internal/async/{project}/{app}/{fn}` starts one of a function,
 * `* /internal/async-http/{project}/{app}/{path…}` one request to a custom app (202, or 200
 * with the run's end if it ended within the submitter's `X-Runlet-Wait-Ms`),
 * `GET /internal/runs/{runId}` tells its state, `DELETE /internal/runs/{runId}` cancels it.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { HEADER } from "../../common/consts.ts";
import type { Deployment } from "../apps.ts";
import type { AsyncCall } from "../async-runs.ts";
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
  const payload = parseJsonBody(await readBody(req, MAX_INVOKE_BODY_BYTES));
  const deployment = deploymentOf(
    registry,
    names,
    "managed",
    `app '${names.app}' uses the custom runtime: async runs call functions`,
  );
  await start(req, res, runs, deployment, { fn, payload, runId });
}

/** Headers of the submission itself, not of the app's request. */
const SUBMISSION_ONLY = new Set(
  [HEADER.callbackUrl, HEADER.waitMs, "content-length"].map((name) => name.toLowerCase()),
);

/** A custom app's async run: the request as it came (less the host's own headers), buffered. */
export async function submitHttpRun(
  req: IncomingMessage,
  res: ServerResponse,
  params: readonly string[],
  { registry, runs }: HostContext,
): Promise<void> {
  const names = projectAndApp(params);
  const runId = runIdOf(req);
  const deployment = deploymentOf(
    registry,
    names,
    "custom",
    `app '${names.app}' uses the managed runtime: async runs of it call functions`,
  );
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(forwardable(req.headers))) {
    if (!SUBMISSION_ONLY.has(name))
      headers[name] = Array.isArray(value) ? value.join(", ") : String(value);
  }
  const body = await readBody(req, MAX_INVOKE_BODY_BYTES);
  const http = {
    method: req.method ?? "GET",
    pathAndQuery: appTarget(req, `/internal/async-http/${params[0]}/${params[1]}`),
    headers,
    body,
  };
  await start(req, res, runs, deployment, { runId, http });
}

/** The longest a submitter may wait for a run's end in the answer to its submission. */
const MAX_WAIT_MS = 1_000;

function waitOf(req: IncomingMessage): number {
  const raw = req.headers[HEADER.waitMs.toLowerCase()];
  if (raw === undefined) return 0;
  if (typeof raw !== "string" || !/^\d{1,6}$/.test(raw))
    throw new HttpError(400, `the ${HEADER.waitMs} header must be a number of milliseconds`);
  return Math.min(Number(raw), MAX_WAIT_MS);
}

/**
 * Starts `call` as a run of `deployment` and answers its submitter: with the run's end if it
 * ends within the submitter's `X-Runlet-Wait-Ms` (200, and no callback), otherwise as running
 * (202, its end goes to the `X-Runlet-Callback-Url`). A submitter that goes away meanwhile
 * leaves the end to the callback.
 */
async function start(
  req: IncomingMessage,
  res: ServerResponse,
  runs: HostContext["runs"],
  deployment: Deployment,
  call: AsyncCall,
): Promise<void> {
  const callbackUrl = callbackOf(req);
  const waitMs = waitOf(req);
  const run = runs.submit(deployment, call, callbackUrl);
  if (!run) throw new HttpError(409, `run '${call.runId}' exists already`);
  const gone = new AbortController();
  res.once("close", () => gone.abort());
  const ended = await runs.awaitEnd(run.runId, waitMs, gone.signal);
  if (!res.destroyed) sendJson(res, ended ? 200 : 202, run);
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
