import type { ServerResponse } from "node:http";
import { HEADER } from "../../common/consts.ts";
import { errorBody } from "../../common/errors.ts";

/** Sends `body` as JSON; every answer of the host goes through here. */
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(text),
    "cache-control": "no-store",
  });
  res.end(text);
}

/** The one error shape: `{message, code}` (common/errors.ts), and what more a route says. */
export function sendError(
  res: ServerResponse,
  status: number,
  message: string,
  more: Record<string, unknown> = {},
): void {
  res.setHeader(HEADER.hostError, "1");
  sendJson(res, status, { ...errorBody(status, message), ...more });
}

/**
 * Aborts once the caller has gone away before its whole answer was sent. (An answered request's
 * close aborts nothing: an abort makes a DOMException, a cost every request paid.)
 */
export function callerGone(res: ServerResponse): AbortSignal {
  const gone = new AbortController();
  if (res.destroyed && !res.writableFinished) gone.abort();
  else res.once("close", () => res.writableFinished || gone.abort());
  return gone.signal;
}
