import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";

/** The closed set of error codes of the management API, each with its HTTP status. */
const STATUS = {
  bad_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  payload_too_large: 413,
  bad_gateway: 502,
  internal: 500,
} as const satisfies Record<string, ContentfulStatusCode>;

export type ErrorCode = keyof typeof STATUS;

export class ApiError extends HTTPException {
  constructor(
    readonly code: ErrorCode,
    message: string,
  ) {
    super(STATUS[code], { message });
  }
}

/** The one error handler: `{message, code}` JSON, never a stack or an internal path. */
export function handleError(err: Error, c: Context) {
  if (err instanceof ApiError) return c.json({ message: err.message, code: err.code }, err.status);
  if (err instanceof HTTPException) {
    const code = err.status === 413 ? "payload_too_large" : "bad_request";
    return c.json({ message: err.message || "bad request", code }, err.status);
  }
  console.error("[control-plane] unexpected error:", err);
  return c.json({ message: "internal error", code: "internal" }, 500);
}
