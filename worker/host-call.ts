/**
 * What a sync call to a runtime host and a request forwarded to one share (host.ts,
 * host-forward.ts): how many hosts one tries, the wait for a host's answer, and the run API
 * errors a host's failures become.
 */
import { codeOf, ERROR_STATUS, type ErrorCode, isErrorCode } from "../common/errors.ts";
import type { Env } from "./env.ts";
import { RunApiError } from "./errors.ts";
import { hostAnswerMs } from "./host-answer.ts";
import { probeWhileWaiting } from "./host-probe.ts";
import type { Background } from "./host-reach.ts";
import type { Target } from "./placement.ts";

export { NO_HOST, notSent } from "../common/protocol/no-run.ts";

/** Hosts a call tries while each says the app's replicas run elsewhere. */
export const MAX_TRIES = 3;

/** Work the caller's answer need not wait for: by default only started (tests). */
export const started: Background = (work) => void work.catch(() => {});

export const SILENT =
  "the runtime host stopped answering while it held the call (its health check went unanswered); the call may have run there";

/**
 * The connection to the host failed before its answer: refused, or cut while the host held the
 * call (a link that broke, a host that died). fetch does not say which, so the caller is told the
 * call may have run: a caller told "not reachable" of a call the host ran to its end would read
 * it as "nothing ran" and send it again, and it would run twice.
 */
export const CUT_OFF =
  "the runtime host could not be reached, or the connection to it broke before it answered; the call may have run there";

/**
 * The wait for a host's answer (to its head): aborted past `HOST_ANSWER_MS`, or once the host
 * no longer answers its health checks (host-probe.ts). `end` once the answer came.
 */
export function waitFor(env: Env, host: Target, startTimeout?: number) {
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
export function at(host: Target, err: RunApiError): RunApiError {
  err.host = host;
  return err;
}

/** Whether a host's 429, 502 or 503 says another host may take the call (runtime-host/http/errors.ts). */
export async function servedElsewhere(res: Response): Promise<boolean> {
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
