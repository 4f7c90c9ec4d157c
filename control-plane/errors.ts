import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import { codeOf, ERROR_STATUS, type ErrorCode } from "../common/errors.ts";

export type { ErrorCode } from "../common/errors.ts";

/**
 * A 404's words for a deleted project (`DELETE /v2/projects/{id}`): every route says it, to
 * whoever asks (its former owner, an operator), and says what to do instead.
 */
export function projectDeleted(projectId: string): string {
  return `project '${projectId}' was deleted: pick another (GET /v2/projects, runlet projects, lists yours) or make one (POST /v2/projects, runlet projects create --name NAME)`;
}

/** What migration 0015's trigger says when an app would be made in a deleted project. */
const PROJECT_DELETED_MARK = "runlet: the project was deleted";

export class ApiError extends HTTPException {
  constructor(
    readonly code: ErrorCode,
    message: string,
    /** Fields the body has beside `message` and `code` (a 409 of the registry: what is held). */
    readonly details?: Record<string, string>,
  ) {
    super(ERROR_STATUS[code], { message });
  }
}

/** The one error handler: `{message, code}` JSON, never a stack or an internal path. */
export function handleError(err: Error, c: Context) {
  if (err instanceof ApiError)
    return c.json({ ...err.details, message: err.message, code: err.code }, err.status);
  if (err instanceof HTTPException) {
    // The management API takes JSON bodies only; Hono's own words do not say that.
    const message =
      err.status === 415
        ? "the body must be JSON, sent with Content-Type: application/json"
        : err.message || "bad request";
    return c.json({ message, code: codeOf(err.status) }, err.status);
  }
  if (someCause(err, (e) => e.message.includes(PROJECT_DELETED_MARK))) {
    // An app made in a project deleted meanwhile (migration 0015's trigger): nothing was written.
    const projectId = (c.get("access") as { projectId?: string } | undefined)?.projectId ?? "";
    return c.json({ message: projectDeleted(projectId), code: "not_found" }, 404);
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

/** Whether `err`, or an error it was caused by (drizzle wraps the driver's), is one `match`es. */
function someCause(err: unknown, match: (e: NodeJS.ErrnoException) => boolean): boolean {
  for (let e = err; e instanceof Error; e = e.cause) if (match(e)) return true;
  return false;
}

/** A write refused for want of space: the file system's (ENOSPC, EDQUOT) or SQLite's. */
export const isDiskFull = (err: unknown): boolean =>
  someCause(
    err,
    // D1 says it in its message.
    (e) =>
      ["ENOSPC", "EDQUOT", "SQLITE_FULL"].includes(e.code ?? "") ||
      /\bSQLITE_FULL\b/.test(e.message),
  );

/** A write refused because another writer holds the database (SQLite's SQLITE_BUSY). */
export const isLocked = (err: unknown): boolean =>
  someCause(
    err,
    (e) => e.code === "SQLITE_BUSY" || /\bSQLITE_BUSY\b|database is locked/i.test(e.message),
  );
