import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import { mustBeOneOf } from "../../common/closest.ts";
import { AUDIT_ACTIONS, OUTCOMES } from "../audit/actions.ts";
import { auditEntryView, listAuditEntries } from "../audit/list.ts";
import { auditWindow, checkOrder, retentionDaysOf } from "../audit/window.ts";
import { access } from "../auth/access.ts";
import type { AppEnv } from "../context.ts";
import {
  bearerAuth,
  DEFAULT_PAGE_SIZE,
  errorResponses,
  pageSizeParam,
  projectIdParam,
  rfc3339Time,
} from "../openapi.ts";
import { nextPageFields, readPageToken } from "../page-token.ts";

/**
 * An RFC 3339 time. One that ends in " hh:mm" was an offset written with a bare '+', which a
 * query string reads as a space: the message says so rather than only that it is malformed.
 */
const rfc3339 = (what: string) => {
  const base = `must be an RFC 3339 date-time (${what}), like 2026-11-22T09:30:00Z`;
  return rfc3339Time((issue) =>
    typeof issue.input === "string" && /T[\d:.]+ \d{2}:\d{2}$/.test(issue.input)
      ? `${base}; a '+' in a query string reads as a space: send the offset as %2B01:00`
      : base,
  );
};

export const auditLogQuery = z.strictObject({
  from: rfc3339("start of the window").optional(),
  to: rfc3339("end of the window; default now").optional(),
  // A near miss is named: `secret.read` listed every action, and which was meant went unsaid.
  action: z.enum(AUDIT_ACTIONS, { error: mustBeOneOf(AUDIT_ACTIONS) }).optional(),
  actor: z.string().min(1).max(128).optional().openapi({ description: "An actor id." }),
  outcome: z.enum(OUTCOMES, { error: "must be success or failure" }).optional(),
  limit: pageSizeParam,
  nextToken: z.string().min(1).max(1024).optional(),
});

export const auditEntrySchema = z
  .object({
    id: z.string(),
    timestamp: z.string().openapi({ format: "date-time" }),
    action: z.string().openapi({ example: "secrets.read" }),
    actor: z.object({
      type: z.enum(["user", "service_account"]),
      id: z.string(),
      name: z.string(),
    }),
    outcome: z.enum(OUTCOMES),
    target: z.object({ type: z.string(), id: z.string() }),
    requestId: z.string(),
    ip: z.string().nullable(),
    userAgent: z.string().nullable(),
    metadata: z.record(z.string(), z.unknown()),
  })
  .openapi("AuditLogEntry");

export const auditLogPageSchema = z
  .object({
    logs: z.array(auditEntrySchema),
    hasMore: z.boolean(),
    nextPageToken: z.string().optional(),
    retentionDays: z.number().int(),
  })
  .openapi("AuditLogPage");

export const listAuditLogsRoute = createRoute({
  method: "get",
  path: "/v2/projects/{projectId}/audit-log",
  operationId: "listAuditLogs",
  summary: "The project's audit log, newest first, over the plan's window (owner only).",
  security: bearerAuth,
  middleware: [
    access({
      role: "owner",
      audit: {
        action: "audit_log.read",
        target: (_c, projectId) => ({ type: "project", id: projectId }),
        successes: false,
      },
    }),
  ] as const,
  request: { params: projectIdParam, query: auditLogQuery },
  responses: {
    200: {
      description: "A page of entries.",
      content: { "application/json": { schema: auditLogPageSchema } },
    },
    ...errorResponses(),
  },
});

export function registerListAuditLogs(app: OpenAPIHono<AppEnv>) {
  app.openapi(listAuditLogsRoute, async (c) => {
    const { db, derived } = c.var.deps;
    const { projectId } = c.var.access;
    const query = c.req.valid("query");
    const retentionDays = await retentionDaysOf(db, projectId);
    const { fromMs, toMs, empty } = auditWindow(retentionDays, query);
    checkOrder(query);

    const { from, to, action, actor, outcome } = query;
    const filters = { list: "audit-log", projectId, from, to, action, actor, outcome };
    const after = query.nextToken
      ? await readPageToken(derived.pageTokens, query.nextToken, filters)
      : undefined;
    const limit = query.limit ?? DEFAULT_PAGE_SIZE;
    const { rows, hasMore } = empty
      ? { rows: [], hasMore: false }
      : await listAuditEntries(db, {
          projectId,
          action,
          actor,
          outcome,
          fromMs,
          toMs,
          limit,
          after,
        });

    const last = rows.at(-1);
    const paging = await nextPageFields(
      derived.pageTokens,
      hasMore,
      last && { timestamp: last.timestamp, id: last.seq },
      filters,
    );
    return c.json(
      {
        logs: rows.map(auditEntryView),
        hasMore,
        ...paging,
        retentionDays,
      },
      200,
    );
  });
}
