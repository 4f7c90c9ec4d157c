import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import { mustBeOneOf as oneOf } from "../../common/closest.ts";
import { RUN_STATUS_ALIASES, RUN_STATUSES, WEBHOOK_STATES } from "../../common/protocol/runs.ts";
import { access } from "../auth/access.ts";
import type { AppEnv } from "../context.ts";
import { ApiError } from "../errors.ts";
import {
  bearerAuth,
  DEFAULT_PAGE_SIZE,
  errorResponses,
  pageSizeParam,
  projectIdParam,
} from "../openapi.ts";
import { nextPageFields, readPageToken } from "../page-token.ts";
import { findRun, listRuns, runView } from "../runs/index.ts";
import { runLogsParams } from "./runs-logs.ts";

export const runsQuery = z.strictObject({
  app: z.string().min(1).max(64).optional(),
  status: z.enum(RUN_STATUSES, { error: oneOf(RUN_STATUSES, RUN_STATUS_ALIASES) }).optional(),
  async: z.enum(["true", "false"], { error: "must be true or false" }).optional(),
  webhook: z
    .enum(WEBHOOK_STATES, { error: oneOf(WEBHOOK_STATES, { canceled: "cancelled" }) })
    .optional()
    .openapi({ description: "Only runs whose (latest) webhook delivery is in this state." }),
  limit: pageSizeParam,
  nextToken: z.string().min(1).max(1024).optional(),
});

export const runSchema = z
  .object({
    id: z.string(),
    app: z.string(),
    function: z.string(),
    async: z.boolean(),
    status: z.enum(RUN_STATUSES),
    createdAt: z.string().openapi({ format: "date-time" }),
    finishedAt: z.string().nullable().openapi({ format: "date-time" }),
    runTimeMs: z.number().nullable(),
    host: z.string().nullable().openapi({
      description: "The runtime host that ran it, by its id in GET /v2/hosts; null if unknown.",
    }),
    error: z
      .object({ message: z.string() })
      .optional()
      .openapi({ description: "Why a failed run failed: the message its caller got." }),
    statusCode: z.number().int().optional().openapi({
      description:
        "A custom app's run: the HTTP status the app answered; a sync function call whose result set its own status_code: that status.",
    }),
    webhook: z
      .object({ state: z.enum(WEBHOOK_STATES), attempts: z.number().int() })
      .nullable()
      .openapi({
        description:
          "The run's webhook delivery (runs called with webhookEndpoint): pending, delivered, failed or cancelled, and the attempts made.",
      }),
  })
  .openapi("Run");

export const listRunsRoute = createRoute({
  method: "get",
  path: "/v2/projects/{projectId}/runs",
  operationId: "listRuns",
  summary: "The project's runs, sync and async, newest first (members and owners).",
  security: bearerAuth,
  middleware: [access({ role: "member" })] as const,
  request: { params: projectIdParam, query: runsQuery },
  responses: {
    200: {
      description: "A page of runs.",
      content: {
        "application/json": {
          schema: z.object({
            runs: z.array(runSchema),
            hasMore: z.boolean(),
            nextPageToken: z.string().optional(),
          }),
        },
      },
    },
    ...errorResponses(),
  },
});

export function registerListRuns(app: OpenAPIHono<AppEnv>) {
  app.openapi(listRunsRoute, async (c) => {
    const { db, derived } = c.var.deps;
    const { projectId } = c.var.access;
    const { app: appName, status, async, webhook, limit, nextToken } = c.req.valid("query");
    const filters = { list: "runs", projectId, app: appName, status, async, webhook };
    const after = nextToken
      ? await readPageToken(derived.pageTokens, nextToken, filters)
      : undefined;
    const { rows, hasMore } = await listRuns(db, {
      projectId,
      app: appName,
      status,
      async: async === undefined ? undefined : async === "true",
      webhook,
      limit: limit ?? DEFAULT_PAGE_SIZE,
      after,
    });
    const last = rows.at(-1);
    const paging = await nextPageFields(
      derived.pageTokens,
      hasMore,
      last && { timestamp: last.createdAt, id: last.id },
      filters,
    );
    return c.json({ runs: rows.map(runView), hasMore, ...paging }, 200);
  });
}

export const getRunRoute = createRoute({
  method: "get",
  path: "/v2/projects/{projectId}/runs/{runId}",
  operationId: "getRun",
  summary: "One run of the project, as the runs list shows it (members and owners).",
  security: bearerAuth,
  // A caller's token too: the run API reads a run without a row in its store with it.
  middleware: [access({ role: "caller" })] as const,
  request: { params: runLogsParams },
  responses: {
    200: { description: "The run.", content: { "application/json": { schema: runSchema } } },
    ...errorResponses({ 404: "The project does not exist, or the run is not one of its runs." }),
  },
});

export function registerGetRun(app: OpenAPIHono<AppEnv>) {
  app.openapi(getRunRoute, async (c) => {
    const { projectId } = c.var.access;
    const { runId } = c.req.valid("param");
    const row = await findRun(c.var.deps.db, projectId, runId);
    // The run a 409 of an Idempotency-Key names, still running, read as a run that never was.
    if (!row)
      throw new ApiError(
        "not_found",
        `run '${runId}' not found in project '${projectId}' (a sync run is listed once it has been on its replica for a second, or has answered)`,
      );
    return c.json(runView(row), 200);
  });
}
