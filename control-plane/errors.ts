import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import { codeOf, ERROR_STATUS, type ErrorCode } from "../common/errors.ts";

export type { ErrorCode } from "../common/errors.ts";

export class ApiError extends HTTPException {
  constructor(
    readonly code: ErrorCode,
    message: string,
  ) {
    super(ERROR_STATUS[code], { message });
  }
}

/** The one error handler: `{message, code}` JSON, never a stack or an internal path. */
export function handleError(err: Error, c: Context) {
  if (err instanceof ApiError) return c.json({ message: err.message, code: err.code }, err.status);
  if (err instanceof HTTPException) {
    // The management API takes JSON bodies only; Hono's own words do not say that.
    const message =
      err.status === 415
        ? "the body must be JSON, sent with Content-Type: application/json"
        : err.message || "bad request";
    return c.json({ message, code: codeOf(err.status) }, err.status);
  }
  if (isDiskFull(err)) {
    console.error("[control-plane] the disk is full:", err.message);
    return c.json(
      {
        message:
          "the control plane's disk is full, so nothing was changed: free space where it keeps its data (RUNLET_HOME locally), then try again",
        code: "insufficient_storage",
      },
      507,
    );
  }
  console.error("[control-plane] unexpected error:", err);
  return c.json({ message: "internal error", code: "internal" }, 500);
}

/** A write refused for want of space: the file system's (ENOSPC, EDQUOT) or SQLite's. */
export function isDiskFull(err: unknown): boolean {
  for (let e = err; e instanceof Error; e = e.cause) {
    const { code } = e as NodeJS.ErrnoException;
    if (code === "ENOSPC" || code === "EDQUOT" || code === "SQLITE_FULL") return true;
    if (/\bSQLITE_FULL\b/.test(e.message)) return true; // D1 says it in its message
  }
  return false;
}
