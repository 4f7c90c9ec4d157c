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

/** Aborts once the answer's connection has closed: the caller went away, or it was answered. */
export function closedSignal(res: ServerResponse): AbortSignal {
  const closed = new AbortController();
  if (res.destroyed) closed.abort();
  else res.once("close", () => closed.abort());
  return closed.signal;
}
