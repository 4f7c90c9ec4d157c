import type { SQL } from "drizzle-orm";
import { createMiddleware } from "hono/factory";
import { newId } from "../../common/ids.ts";
import type { AppEnv, Ctx, PendingAudit } from "../context.ts";
import { viaDashboard } from "../dashboard/via.ts";
import { insertIf } from "../db/insert-if.ts";
import { auditLog } from "../db/schema.ts";
import { isDiskFull, isLocked } from "../errors.ts";
import type { Outcome } from "./actions.ts";
import { hold, writeHeld } from "./backlog.ts";
import { subjectKey } from "./keys.ts";

type Metadata = Record<string, unknown>;

export type AuditEntry = Omit<typeof auditLog.$inferInsert, "seq" | "projectKey" | "actorKey">;

/** An entry as the audit table stores it: with the index keys of its project and actor. */
export function auditRow(entry: AuditEntry): typeof auditLog.$inferInsert {
  return { ...entry, projectKey: subjectKey(entry.projectId), actorKey: subjectKey(entry.actorId) };
}

/** An entry of `pending` as the audit table stores it, for a route that writes it itself. */
export function auditEntry(
  c: Ctx,
  pending: Omit<PendingAudit, "written">,
  outcome: Outcome,
  metadata: Metadata,
) {
  const now = Date.now();
  const userAgent = c.req.header("user-agent");
  // The dashboard's in-process requests: the browser's address, and where the act came from.
  const via = viaDashboard(c);
  return auditRow({
    id: newId("log", now),
    projectId: pending.projectId,
    timestamp: now,
    action: pending.action,
    actorType: pending.principal.type,
    actorId: pending.principal.id,
    actorName: pending.principal.name,
    outcome,
    targetType: pending.target.type,
    targetId: pending.target.id,
    requestId: c.var.requestId,
    ip: via ? via.ip : (c.var.deps.clientIp?.(c) ?? null),
    userAgent: userAgent ? userAgent.slice(0, 512) : null,
    metadata: via ? { ...metadata, source: "dashboard" } : metadata,
  });
}

/**
 * The success entry of an audited route, as an insert to put in the same `db.batch` as the change
 * it records: both land, or neither. `metadata` must never hold a secret value.
 */
export function auditSuccess(c: Ctx, metadata: Metadata = {}) {
  const pending = c.var.audit;
  if (!pending) throw new Error(`${c.req.method} ${c.req.path} is not an audited route`);
  pending.written = true;
  return c.var.deps.db.insert(auditLog).values(auditEntry(c, pending, "success", metadata));
}

/**
 * The success entry of an audited route, written only if `condition` holds when the batch runs
 * (`insertIf`): for a change that is itself conditional, so the entry is there iff the change is.
 */
export function auditSuccessIf(c: Ctx, condition: SQL, metadata: Metadata = {}) {
  const pending = c.var.audit;
  if (!pending) throw new Error(`${c.req.method} ${c.req.path} is not an audited route`);
  pending.written = true;
  const entry = auditEntry(c, pending, "success", metadata);
  return insertIf(c.var.deps.db, auditLog, entry, condition);
}

/**
 * The success entries of an audited route whose act concerns more than one project: one in the
 * route's project and one in each of `alsoIn`, all for the same batch as the change.
 */
export function auditSuccesses(c: Ctx, metadata: Metadata = {}) {
  const pending = c.var.audit;
  if (!pending) throw new Error(`${c.req.method} ${c.req.path} is not an audited route`);
  const others = (pending.alsoIn ?? []).filter((id) => id !== pending.projectId);
  return [
    auditSuccess(c, metadata),
    ...others.map((projectId) =>
      c.var.deps.db
        .insert(auditLog)
        .values(auditEntry(c, { ...pending, projectId }, "success", metadata)),
    ),
  ];
}

/**
 * Opens the audit record of a route whose project is only known inside the handler (creating a
 * project): from here on it behaves as if `access()` had opened it.
 */
export function openAudit(c: Ctx, pending: Omit<PendingAudit, "written">) {
  c.set("audit", { ...pending, written: false });
}

/**
 * App middleware: once an audited request has been refused or has failed (any 4xx/5xx after its
 * caller was known), writes its failure entry with the status and the message the caller got.
 * A success entry is part of the change's own batch, so a failed batch left none behind.
 */
export const recordFailures = createMiddleware<AppEnv>(async (c, next) => {
  await next();
  const pending = c.var.audit;
  if (!pending) return;
  await writeHeld(c.var.deps.db);
  if (c.res.status < 400) {
    if (!pending.written)
      console.error(`[control-plane] ${c.req.method} ${c.req.path} succeeded unaudited`);
    return;
  }
  let message: unknown;
  try {
    message = ((await c.res.clone().json()) as { message?: unknown }).message;
  } catch {
    message = undefined;
  }
  const metadata: Metadata = { status: c.res.status };
  if (typeof message === "string") metadata.error = message;
  const others = (pending.alsoIn ?? []).filter((id) => id !== pending.projectId);
  for (const projectId of [pending.projectId, ...others]) {
    const row = auditEntry(c, { ...pending, projectId }, "failure", metadata);
    try {
      await c.var.deps.db.insert(auditLog).values(row);
    } catch (err) {
      // The database is full or busy: the entry waits. Or the project does not exist (a failed
      // create): there is nothing to record it under. The caller's answer stands either way.
      if (isDiskFull(err) || isLocked(err)) {
        hold(c.var.deps.db, row, err);
      } else {
        console.error(`[control-plane] could not record a failed ${pending.action}:`, err);
      }
    }
  }
});
