/**
 * A custom-runtime app's request, forwarded to the best of its hosts (placement.ts) as the
 * caller sent it, and the app's answer streamed back.
 */
import { HEADER } from "../common/consts.ts";
import { hostPath } from "../common/protocol/paths.ts";
import { watchedBody } from "./caller-body.ts";
import type { Env } from "./env.ts";
import { RunApiError } from "./errors.ts";
import {
  at,
  CUT_OFF,
  hostError,
  MAX_TRIES,
  NO_HOST,
  notSent,
  SILENT,
  servedElsewhere,
  started,
  waitFor,
} from "./host-call.ts";
import { type Background, reachable } from "./host-reach.ts";
import { answered, type OpenCall, placeCall, suspect, type Target } from "./placement.ts";

/**
 * A custom app's sync request body up to this size is read whole before it is sent, when there
 * are several hosts, so it can go to the next host; a larger one streams to the first only.
 */
const RESENT_BODY_BYTES = 1024 * 1024;

/** The caller's upload broke off: read whole here first (`notCalled`), or on its way to the app. */
const cutUpload = (notCalled: boolean) =>
  `the request's body broke off before its Content-Length's end (the caller's connection closed): ${notCalled ? "the app was not called" : "the app's request was cut off too"}`;

/**
 * The caller's headers as a custom app gets them: without their Runlet token (app code could
 * act as the caller with it), without the webhook secret (kept only for the delivery), and
 * without Runlet's internal headers (a caller's would pass for the Worker's at the host).
 */
export function appHeaders(headers: Headers): Headers {
  const out = new Headers(headers);
  out.delete("authorization");
  out.delete(HEADER.webhookSecret);
  const internal = [
    HEADER.runId,
    HEADER.hostError,
    HEADER.callbackUrl,
    HEADER.waitMs,
    HEADER.appId,
    HEADER.noResult,
  ];
  for (const name of internal) out.delete(name);
  // Between the caller and the Worker, which has taken the body: sent on, the host's server
  // answered 100 Continue, which the Worker took for the app's answer (curl sends it past 1 MiB).
  out.delete("expect");
  return out;
}

/**
 * Forwards a request to a custom-runtime app through its runtime host: method, the path after
 * the app, query, headers (the caller's token replaced by the host's) and body, unchanged. The
 * app's answer comes back as it is, streamed; the host's own failures become `RunApiError`s.
 */
export async function forwardToHost(
  env: Env,
  target: {
    project: string;
    app: string;
    pathAndQuery: string;
    runId: string;
    concurrency: number;
    capacity?: number;
    /** The app's `start_timeout` (seconds): how long the host may take before its answer's head. */
    startTimeout?: number;
    /** The request's `waitUntil`: the registry told of a host not reached. */
    background?: Background;
  },
  request: Request,
  /** The body read already (a key's, or one without a Content-Length): sent with its length. */
  buffered: ArrayBuffer | null = null,
): Promise<{ answer: Response; host: Target }> {
  const { hosts: placed, open } = await placeCall(env, target);
  if (placed.length === 0) throw new RunApiError(502, NO_HOST);
  // Counted open on its host until the answer's head (placement.ts): a burst spreads as placed.
  try {
    return await sendOn(env, target, request, placed, open, buffered);
  } finally {
    open.end();
  }
}

/** forwardToHost's tries, each of `placed` in turn (`open` counts the request where it is). */
async function sendOn(
  env: Env,
  target: Parameters<typeof forwardToHost>[1],
  request: Request,
  placed: Target[],
  open: OpenCall,
  buffered: ArrayBuffer | null,
): Promise<{ answer: Response; host: Target }> {
  const { project, app, pathAndQuery, runId } = target;
  const headers = appHeaders(request.headers);
  headers.set("authorization", `Bearer ${env.INTERNAL_TOKEN}`);
  headers.set(HEADER.runId, runId);
  const bodiless = request.method === "GET" || request.method === "HEAD";
  // A host that cannot start a replica of the app (429 elsewhere: nothing ran) sends it to the
  // next, as a function call goes: a body that small is read here first, to be sent again.
  let body: ArrayBuffer | ReadableStream | null = bodiless ? null : (buffered ?? request.body);
  const length = Number(request.headers.get("content-length") ?? Number.POSITIVE_INFINITY);
  if (body instanceof ReadableStream && placed.length > 1 && length <= RESENT_BODY_BYTES) {
    body = await new Response(body).arrayBuffer().catch(() => {
      throw new RunApiError(400, cutUpload(true));
    });
  }
  // A body streamed on is watched: the caller's upload breaking off is not the host's failure.
  const streamed =
    body instanceof ReadableStream && Number.isSafeInteger(length)
      ? watchedBody(body, length)
      : undefined;
  if (streamed) body = streamed.stream;
  // A GET or HEAD may also go to the next host when one cannot be reached (HTTP makes them
  // safe); a request with a body may have run there, and is not sent again then. A body streamed
  // on is sent once: only a host not connected to before it was sent passes it to the next.
  const resendable = !(body instanceof ReadableStream);
  const hosts = placed.slice(0, MAX_TRIES);
  let res: Response | undefined;
  let reached: Target | undefined;
  let failure = CUT_OFF;
  // Whether a host got the request (it may have run there), and the refusal of one that turned
  // it away unstarted: the caller's answer if no host after it can be connected to.
  let sent = false;
  let refused: RunApiError | undefined;
  for (const [i, host] of hosts.entries()) {
    open.on(host.url);
    const reach = await reachable(env, host, target.background ?? started);
    if (!reach.ok) {
      reached ??= host;
      if (!sent) failure = notSent(reach.error);
      continue;
    }
    reached = host;
    sent = true;
    // Bounded until the answer's head, as a function call is (the body may stream for longer).
    const wait = waitFor(env, host, target.startTimeout);
    try {
      res = await fetch(host.url + hostPath.http(project, app, pathAndQuery), {
        method: request.method,
        headers,
        body,
        redirect: "manual",
        signal: wait.signal,
      });
    } catch {
      if (wait.timedOut())
        throw at(host, new RunApiError(504, "the runtime host did not answer the request in time"));
      if (streamed?.cut()) throw at(host, new RunApiError(400, cutUpload(false)));
      suspect(host.url);
      failure = wait.silent() ? SILENT : CUT_OFF;
      if (bodiless) continue;
      break;
    } finally {
      wait.end();
    }
    answered(host.url);
    const notHere = res.headers.get(HEADER.hostError) && [429, 502, 503].includes(res.status);
    const refusal = notHere && resendable && i < hosts.length - 1 ? res.clone() : undefined;
    if (refusal && (await servedElsewhere(res))) {
      refused = at(host, await hostError(refusal));
      res = undefined;
      continue;
    }
    await refusal?.body?.cancel();
    break;
  }
  if (!res && refused) throw refused;
  if (!res || !reached) {
    const err = new RunApiError(502, failure);
    throw reached ? at(reached, err) : err;
  }
  if (res.headers.get(HEADER.hostError)) throw at(reached, await hostError(res));
  return { answer: res, host: reached };
}
