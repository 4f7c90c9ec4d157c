/**
 * What `runlet run` may say of a failed call's run: whether a run stands behind its id (`run id:`,
 * for `runlet status`), and whether it reached a runtime host, so has logs (`runlet logs`).
 * The Worker's words for those come from common/protocol/no-run.ts and common/no-function.ts,
 * which it and the runtime host answer with.
 */
import { noFunctionHead } from "../../common/no-function.ts";
import {
  CANNOT_VERIFY,
  CONTROL_PLANE_ANSWERED,
  CONTROL_PLANE_UNREACHABLE,
  NO_HOST,
  NO_HOST_REACHED,
} from "../../common/protocol/no-run.ts";

/** A call's answer as `runlet run` read it: `runlets` true for the run API's own `{message}`. */
interface Answer {
  status: number;
  body: unknown;
  runlets?: boolean;
}

const messageOf = (body: unknown): string => {
  const { message } = (body ?? {}) as { message?: unknown };
  return typeof message === "string" ? message : "";
};

/**
 * A 502 the Worker answers before it makes a run: the control plane could not be reached (or
 * answered an error) as it checked the token or read the app (worker/auth.ts), so no run was
 * made, nor could one be listed. `runlet run` printed `run id:` and `runlet logs` for it, a run
 * `runlet status` then said was not found.
 */
const controlPlaneDown = (message: string): boolean => {
  const said = message.startsWith(CANNOT_VERIFY) ? message.slice(CANNOT_VERIFY.length) : message;
  return said === CONTROL_PLANE_UNREACHABLE || said.startsWith(`${CONTROL_PLANE_ANSWERED} `);
};

/**
 * No runtime host took the call, so nothing ran: none is up, or none could be connected to
 * before the call was sent (worker/host-call.ts). Its run is listed, failed, but has no logs.
 */
const noHostTookIt = (message: string): boolean =>
  message === NO_HOST || message.startsWith(`${NO_HOST_REACHED}: `);

/**
 * Whether a run stands behind the answer's id, for `runlet status` to find. The run API refuses
 * a bad token, input or webhook (400, 401, 403, 413, 415), an unknown project or app (404), a
 * path that is no function's (405) and an Idempotency-Key it cannot take (409: its first call
 * has not answered, or its answer was not kept; 422: used with another request; its message
 * names the key's run where there is one) before it makes a run: their id is the request's
 * alone, as is a 502's whose control plane was not reached. A 404 for a function the app does
 * not export was found out by a run, which the runs index keeps, as is any status a function
 * returned (`status_code`) or a custom app answered.
 */
export function madeRun({ status, body, runlets }: Answer, app: string, fn: string): boolean {
  if (!runlets) return true;
  if (status === 404) return messageOf(body).startsWith(noFunctionHead(app, fn));
  if (status === 502 && controlPlaneDown(messageOf(body))) return false;
  return ![400, 401, 403, 405, 409, 413, 415, 422].includes(status);
}

/** Whether a failure (5xx) came from a runtime host that had the call: its run has logs. */
export function ranOnAHost({ status, body }: Answer): boolean {
  return status >= 500 && !(status === 502 && noHostTookIt(messageOf(body)));
}
