import type { ServerResponse } from "node:http";

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

/** Marks the host's own error answers, told apart from a custom-runtime app's own errors. */
export const HOST_ERROR_HEADER = "x-runlet-host-error";

/** The one error shape: `{"message": "..."}`. */
export function sendError(res: ServerResponse, status: number, message: string): void {
  res.setHeader(HOST_ERROR_HEADER, "1");
  sendJson(res, status, { message });
}
