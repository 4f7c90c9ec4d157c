/**
 * `GET /v2/projects/{projectId}/audit-log/export?format=csv|ndjson`: every entry the list's
 * filters select, streamed (see `audit/export.ts`). Owners only, audited as `audit_log.export`.
 */
import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import { EXPORT_CONTENT_TYPES, EXPORT_FORMATS } from "../../common/protocol/audit-export.ts";
import { EXPORT_PAGE_SIZE, exportStream } from "../audit/export.ts";
import { auditSuccess } from "../audit/record.ts";
import { auditWindow, checkOrder, retentionDaysOf } from "../audit/window.ts";
import { access } from "../auth/access.ts";
import type { AppEnv } from "../context.ts";
import { bearerAuth, errorResponses, projectIdParam } from "../openapi.ts";
import { auditLogQuery } from "./audit-log-list.ts";

/** The list's filters (not its paging), and the format. */
export const auditLogExportQuery = auditLogQuery.omit({ limit: true, nextToken: true }).extend({
  format: z
    .enum(EXPORT_FORMATS, { error: "must be csv or ndjson" })
    .openapi({ description: "csv (RFC 4180, formula-safe) or ndjson (one entry per line)." }),
});

export const exportAuditLogRoute = createRoute({
  method: "get",
  path: "/v2/projects/{projectId}/audit-log/export",
  operationId: "exportAuditLog",
  summary:
    "Every entry the filters select, newest first, streamed as CSV or NDJSON (owner only; audited as audit_log.export).",
  security: bearerAuth,
  middleware: [
    access({
      role: "owner",
      audit: {
        action: "audit_log.export",
        target: (_c, projectId) => ({ type: "project", id: projectId }),
      },
    }),
  ] as const,
  request: { params: projectIdParam, query: auditLogExportQuery },
  responses: {
    200: {
      description:
        "An attachment. CSV: a header row, then id, timestamp, action, actor_type, actor_id, actor_name, outcome, target_type, target_id, request_id, ip, user_agent, metadata (JSON); a field starting with =, +, -, @, tab or CR is prefixed with '. NDJSON: one AuditLogEntry per line.",
      content: {
        [EXPORT_CONTENT_TYPES.csv]: { schema: z.string() },
        [EXPORT_CONTENT_TYPES.ndjson]: { schema: z.string() },
      },
    },
    ...errorResponses(),
  },
});

export function registerExportAuditLog(app: OpenAPIHono<AppEnv>) {
  app.openapi(exportAuditLogRoute, async (c) => {
    const { db } = c.var.deps;
    const { projectId } = c.var.access;
    const { format, ...filters } = c.req.valid("query");
    const { action, actor, outcome } = filters;
    checkOrder(filters);
    const retentionDays = await retentionDaysOf(db, projectId);

    // On the record before the first byte: once the 200 and its headers are sent, a later
    // failure can no longer become this request's failure entry, and the data may have left.
    // So the entry says the export began (with the format and filters, which hold no secret).
    await db.batch([auditSuccess(c, { format, filters })]);

    // `to` defaults to now, taken after that entry: an unfiltered export lists itself first.
    const now = Date.now();
    const { fromMs, toMs, empty } = auditWindow(retentionDays, filters, now);
    const body = exportStream(db, { projectId, action, actor, outcome, fromMs, toMs }, format, {
      empty,
      pageSize: EXPORT_PAGE_SIZE,
    });
    const date = new Date(now).toISOString().slice(0, 10);
    return c.body(body, 200, {
      "content-type": EXPORT_CONTENT_TYPES[format],
      "content-disposition": `attachment; filename="audit-log-${projectId}-${date}.${format}"`,
      "cache-control": "no-store",
      "x-content-type-options": "nosniff",
    });
  });
}
