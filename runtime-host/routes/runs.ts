/**
 * Async runs on the host (see async-runs.ts): `POST /internal/async/{project}/{app}/{fn}` submits
 * one of a function, `* /internal/async-http/{project}/{app}/{path…}` one request to a custom
 * app. The run waits `queued` for a replica slot as long as it takes; the submission is answered
 * once it has started: 202 with the run, or 200 with its end if it ended within the submitter's
 * `X-Runlet-Wait-Ms` (or was cancelled while queued). 409 `{message, run}`: the host knows a run
 * of that id already. 429: the app's queue is full; 404: the app is not deployed (or was removed
 * meanwhile); 503: the host is stopping. A submitter that goes away while its run is queued
 * withdraws it: the host forgets it. `GET /internal/runs/{runId}` tells a run's state (queued
 * ones too), `DELETE /internal/runs/{runId}` cancels a queued or running one.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { HEADER } from "../../common/consts.ts";
import { parseHttpUrl } from "../../common/http-url.ts";
import { hostPath } from "../../common/protocol/paths.ts";
import type { Deployment } from "../apps.ts";
import type { HostContext } from "../context.ts";
import { parseJsonBody, readBody } from "../http/body.ts";
import { HttpError } from "../http/errors.ts";
import {
  acceptedForOf,
  appTarget,
  deploymentOf,
  forwardable,
  functionName,
  projectAndApp,
  runIdOf,
} from "../http/params.ts";
import { callerGone, sendError, sendJson } from "../http/respond.ts";
import { MAX_INVOKE_BODY_BYTES } from "../limits.ts";
import type { AsyncCall } from "../runs/types.ts";

function callbackOf(req: IncomingMessage): string | undefined {
  // Where the host reports the run's end (the Worker's internal route); optional.
  const raw = req.headers[HEADER.callbackUrl.toLowerCase()];
  if (raw === undefined) return undefined;
  const url = typeof raw === "string" ? parseHttpUrl(raw) : undefined;
  if (!url) {
    throw new HttpError(400, `the ${HEADER.callbackUrl} header must be an absolute http(s) URL`);
  }
  return url.href;
}

/** `X-Runlet-No-Result: 1`: the run has no webhook, and nobody reads its result. */
function noResultOf(req: IncomingMessage): boolean {
  return req.headers[HEADER.noResult.toLowerCase()] === "1";
}

export async function submitRun(
  req: IncomingMessage,
  res: ServerResponse,
  params: readonly string[],
  { versions, runs }: HostContext,
): Promise<void> {
  const names = projectAndApp(params);
  const fn = functionName(params[2] ?? "");
  const runId = runIdOf(req);
  const payload = parseJsonBody(await readBody(req, MAX_INVOKE_BODY_BYTES));
  const deployment = await deploymentOf(
    versions,
    names,
    "managed",
    `app '${names.app}' uses the custom runtime: async runs call functions`,
    { appId: acceptedForOf(req), runId },
  );
  await start(req, res, runs, deployment, { fn, payload, runId, noResult: noResultOf(req) });
}

/** Headers of the submission itself, not of the app's request. */
const SUBMISSION_ONLY = new Set(
  [HEADER.callbackUrl, HEADER.waitMs, HEADER.noResult, "content-length"].map((name) =>
    name.toLowerCase(),
  ),
);

/** A custom app's async run: the request as it came (less the host's own headers), buffered. */
export async function submitHttpRun(
  req: IncomingMessage,
  res: ServerResponse,
  params: readonly string[],
  { versions, runs }: HostContext,
): Promise<void> {
  const names = projectAndApp(params);
  const runId = runIdOf(req);
  const deployment = await deploymentOf(
    versions,
    names,
    "custom",
    `app '${names.app}' uses the managed runtime: async runs of it call functions`,
    { appId: acceptedForOf(req), runId },
  );
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(forwardable(req.headers))) {
    if (!SUBMISSION_ONLY.has(name))
      headers[name] = Array.isArray(value) ? value.join(", ") : String(value);
  }
  const body = await readBody(req, MAX_INVOKE_BODY_BYTES);
  const http = {
    method: req.method ?? "GET",
    pathAndQuery: appTarget(req, hostPath.asyncHttp(names.project, names.app, "")),
    headers,
    body,
  };
  await start(req, res, runs, deployment, { runId, http, noResult: noResultOf(req) });
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
 * Submits `call` as a run of `deployment` and answers its submitter once the run has started:
 * with the run's end if it ends within the submitter's `X-Runlet-Wait-Ms` (200, and no
 * callback), otherwise as running (202, its end goes to the `X-Runlet-Callback-Url`). A
 * submitter that goes away after the start leaves the end to the callback.
 */
async function start(
  req: IncomingMessage,
  res: ServerResponse,
  runs: HostContext["runs"],
  deployment: Deployment,
  call: AsyncCall,
): Promise<void> {
  const submitter = { callbackUrl: callbackOf(req), waitMs: waitOf(req), gone: callerGone(res) };
  // A refusal (busy, removed, closing) is answered by its kind (http/errors.ts).
  const submitted = await runs.submit(deployment, call, submitter);
  if (submitted.kind === "withdrawn" || res.destroyed) return; // no one to answer
  const { kind, run } = submitted;
  if (kind === "exists") {
    const message = `run '${run.runId}' exists already (${run.status}) on this host`;
    return sendError(res, 409, message, { run });
  }
  sendJson(res, kind === "ended" ? 200 : 202, run);
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

/** Cancels a queued or running run (200, again 200); an ended one is 409. */
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
