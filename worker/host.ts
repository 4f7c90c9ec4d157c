import { HEADER } from "../common/consts.ts";
import { codeOf, ERROR_STATUS, type ErrorCode, isErrorCode } from "../common/errors.ts";
import { type Invocation, invocationSchema } from "../common/protocol/host.ts";
import { hostPath } from "../common/protocol/paths.ts";
import { watchedBody } from "./caller-body.ts";
import type { Env } from "./env.ts";
import { RunApiError } from "./errors.ts";
import { hostAnswerMs } from "./host-answer.ts";
import { probeWhileWaiting } from "./host-probe.ts";
import { hostsFor, inFlight, suspect, type Target } from "./placement.ts";

/** Hosts a call tries while each says the app's replicas run elsewhere. */
const MAX_TRIES = 3;

/**
 * A custom app's sync request body up to this size is read whole before it is sent, when there
 * are several hosts, so it can go to the next host; a larger one streams to the first only.
 */
const RESENT_BODY_BYTES = 1024 * 1024;

/**
 * Calls `fn` of an app on the best of its hosts (placement.ts), the next one if a host says it
 * cannot run the app (429 elsewhere: nothing ran); host-level failures become `RunApiError`s.
 */
export async function invokeOnHost(
  env: Env,
  target: {
    project: string;
    app: string;
    fn: string;
    runId: string;
    concurrency: number;
    capacity?: number;
    /** The app's `start_timeout` (seconds): how long the host may take before it answers. */
    startTimeout?: number;
  },
  body: ArrayBuffer,
): Promise<Invocation & { host: Target }> {
  const { project, app, fn, runId, concurrency, capacity } = target;
  const hosts = (await hostsFor(env, project, app, concurrency, capacity)).slice(0, MAX_TRIES);
  if (hosts.length === 0) throw new RunApiError(502, NO_HOST);
  let res: Response | undefined;
  for (const [i, host] of hosts.entries()) {
    const done = inFlight(host.url, project, app);
    const wait = waitFor(env, host, target.startTimeout);
    try {
      res = await fetch(host.url + hostPath.invoke(project, app, fn), {
        method: "POST",
        headers: {
          authorization: `Bearer ${env.INTERNAL_TOKEN}`,
          "content-type": "application/json",
          [HEADER.runId]: runId,
        },
        body,
        signal: wait.signal,
      });
    } catch {
      done();
      if (wait.timedOut())
        throw at(host, new RunApiError(504, "the runtime host did not answer the call in time"));
      // Unreachable, frozen, or it died with the call: the call may have run there, so it is
      // not sent again (the caller's 502); the next calls go to the other hosts.
      suspect(host.url);
      throw at(host, new RunApiError(502, wait.silent() ? SILENT : CUT_OFF));
    } finally {
      wait.end();
    }
    // A host that cannot start a replica of the app (its replicas run on others; 502: its own
    // failure to start one, as its sandbox), or that is stopping and turned the call away
    // unstarted: the next.
    const notHere = res.status === 429 || res.status === 502 || res.status === 503;
    if (notHere && i < hosts.length - 1 && (await servedElsewhere(res))) {
      done();
      res = undefined;
      continue;
    }
    try {
      if (!res.ok) throw at(host, await hostError(res));
      const invocation = invocationSchema.safeParse(await res.json().catch(() => undefined));
      if (!invocation.success)
        throw at(host, new RunApiError(502, "the runtime host's answer was not a call's"));
      return { ...invocation.data, host };
    } finally {
      done();
    }
  }
  throw new RunApiError(502, "the runtime host is not reachable");
}

/** The caller's upload broke off: read whole here first (`notCalled`), or on its way to the app. */
const cutUpload = (notCalled: boolean) =>
  `the request's body broke off before its Content-Length's end (the caller's connection closed): ${notCalled ? "the app was not called" : "the app's request was cut off too"}`;

const SILENT =
  "the runtime host stopped answering while it held the call (its health check went unanswered); the call may have run there";

/**
 * No host takes work: the registry has each down, stopping or drained (and no fallback is set).
 * A 502, as every failure to reach a host is (a host's own 503 is a 502 too): DESIGN.md's run
 * API answers a host's failures 502, and lists no 503 for them.
 */
const NO_HOST =
  "no runtime host is up to take the call (each is down, stopping or drained by an operator); try again shortly";

/**
 * The connection to the host failed before its answer: refused, or cut while the host held the
 * call (a link that broke, a host that died). fetch does not say which, so the caller is told the
 * call may have run: a caller told "not reachable" of a call the host ran to its end would read
 * it as "nothing ran" and send it again, and it would run twice.
 */
const CUT_OFF =
  "the runtime host could not be reached, or the connection to it broke before it answered; the call may have run there";

/**
 * The wait for a host's answer (to its head): aborted past `HOST_ANSWER_MS`, or once the host
 * no longer answers its health checks (host-probe.ts). `end` once the answer came.
 */
function waitFor(env: Env, host: Target, startTimeout?: number) {
  const abort = new AbortController();
  let silent = false;
  const timer = setTimeout(() => abort.abort(), hostAnswerMs(env, startTimeout));
  const stopProbing = probeWhileWaiting(env, host.url, () => {
    silent = true;
    abort.abort();
  });
  return {
    signal: abort.signal,
    silent: () => silent,
    timedOut: () => abort.signal.aborted && !silent,
    end: () => {
      clearTimeout(timer);
      stopProbing();
    },
  };
}

/** `err`, noting the host the run failed at (the runs index shows it). */
function at(host: Target, err: RunApiError): RunApiError {
  err.host = host;
  return err;
}

/** Whether a host's 429, 502 or 503 says another host may take the call (runtime-host/http/errors.ts). */
async function servedElsewhere(res: Response): Promise<boolean> {
  const body = (await res
    .clone()
    .json()
    .catch(() => ({}))) as { elsewhere?: unknown };
  if (body.elsewhere === true) await res.body?.cancel();
  return body.elsewhere === true;
}

/**
 * The host's refusals that are the caller's business, passed on as they are; any other (its
 * 401: our own internal token is wrong; its 503: it is stopping) is a 502 to the caller.
 */
const PASSED_ON: ReadonlySet<ErrorCode> = new Set([
  "bad_request",
  "not_found",
  "payload_too_large",
  "too_many_requests",
  "gateway_timeout",
]);

/** The run API error for an error answer (`{message, code}`) of the host itself. */
export async function hostError(res: Response): Promise<RunApiError> {
  const body = (await res.json().catch(() => ({}))) as {
    message?: unknown;
    code?: unknown;
    run_time_ms?: unknown;
  };
  const code = isErrorCode(body.code) ? body.code : codeOf(res.status);
  const message =
    typeof body.message === "string" ? body.message : `the runtime host answered ${res.status}`;
  const err = new RunApiError(PASSED_ON.has(code) ? ERROR_STATUS[code] : 502, message);
  // Its input refused (not JSON, too deep, too large): the host checks it before a run.
  if (code === "bad_request" || code === "payload_too_large") err.beforeRun = true;
  // A call that failed once it ran there (its process died, its limit): how long it ran.
  const ran = body.run_time_ms;
  if (typeof ran === "number" && Number.isFinite(ran) && ran >= 0) err.runTimeMs = ran;
  return err;
}

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
  },
  request: Request,
  /** The body read already (a key's, or one without a Content-Length): sent with its length. */
  buffered: ArrayBuffer | null = null,
): Promise<{ answer: Response; host: Target }> {
  const { project, app, pathAndQuery, runId } = target;
  const headers = appHeaders(request.headers);
  headers.set("authorization", `Bearer ${env.INTERNAL_TOKEN}`);
  headers.set(HEADER.runId, runId);
  const bodiless = request.method === "GET" || request.method === "HEAD";
  const placed = await hostsFor(env, project, app, target.concurrency, target.capacity);
  if (placed.length === 0) throw new RunApiError(502, NO_HOST);
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
  // safe); a request with a body may have run there, and is not sent again then.
  const hosts = placed.slice(0, body instanceof ReadableStream ? 1 : MAX_TRIES);
  let res: Response | undefined;
  let reached: Target | undefined;
  let failure = CUT_OFF;
  for (const [i, host] of hosts.entries()) {
    reached = host;
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
      if (wait.silent()) failure = SILENT;
      if (bodiless) continue;
      break;
    } finally {
      wait.end();
    }
    const notHere = res.headers.get(HEADER.hostError) && [429, 502, 503].includes(res.status);
    if (notHere && i < hosts.length - 1 && (await servedElsewhere(res))) {
      res = undefined;
      continue;
    }
    break;
  }
  if (!res || !reached) {
    const err = new RunApiError(502, failure);
    throw reached ? at(reached, err) : err;
  }
  if (res.headers.get(HEADER.hostError)) throw at(reached, await hostError(res));
  return { answer: res, host: reached };
}
