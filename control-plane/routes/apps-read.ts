import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import { and, asc, eq } from "drizzle-orm";
import { access } from "../auth/access.ts";
import type { AppEnv } from "../context.ts";
import { apps } from "../db/schema.ts";
import { ApiError } from "../errors.ts";
import { bearerAuth, errorResponses, projectIdParam } from "../openapi.ts";

export const appSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    runtime: z.enum(["managed", "custom"]),
    version: z.number().int(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi("App");

export type AppView = z.infer<typeof appSchema>;

function view(row: typeof apps.$inferSelect): AppView {
  return {
    id: row.id,
    name: row.name,
    runtime: row.runtime,
    version: row.currentVersion,
    createdAt: new Date(row.createdAt).toISOString(),
    updatedAt: new Date(row.updatedAt).toISOString(),
  };
}

export const listAppsRoute = createRoute({
  method: "get",
  path: "/v2/projects/{projectId}/apps",
  operationId: "listApps",
  summary: "The project's apps and their live versions (members and owners).",
  security: bearerAuth,
  middleware: [access({ role: "member" })] as const,
  request: { params: projectIdParam },
  responses: {
    200: {
      description: "The apps, by name.",
      content: { "application/json": { schema: z.object({ apps: z.array(appSchema) }) } },
    },
    ...errorResponses(),
  },
});

export const getAppRoute = createRoute({
  method: "get",
  path: "/v2/projects/{projectId}/apps/{appName}",
  operationId: "getApp",
  summary: "One app (members and owners).",
  security: bearerAuth,
  middleware: [access({ role: "member" })] as const,
  request: { params: projectIdParam.extend({ appName: z.string() }) },
  responses: {
    200: { description: "The app.", content: { "application/json": { schema: appSchema } } },
    ...errorResponses({ 404: "The project or the app does not exist." }),
  },
});

export function registerReadApps(app: OpenAPIHono<AppEnv>) {
  app.openapi(listAppsRoute, async (c) => {
    const rows = await c.var.deps.db
      .select()
      .from(apps)
      .where(eq(apps.projectId, c.var.access.projectId))
      .orderBy(asc(apps.name));
    return c.json({ apps: rows.map(view) }, 200);
  });

  app.openapi(getAppRoute, async (c) => {
    const { projectId } = c.var.access;
    const { appName } = c.req.valid("param");
    const [row] = await c.var.deps.db
      .select()
      .from(apps)
      .where(and(eq(apps.projectId, projectId), eq(apps.name, appName)));
    if (!row)
      throw new ApiError("not_found", `app '${appName}' is not deployed in project '${projectId}'`);
    return c.json(view(row), 200);
  });
}
