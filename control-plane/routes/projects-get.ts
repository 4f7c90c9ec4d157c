/**
 * `GET /v2/projects/{projectId}`: one project, with the caller's role in it (any role), as
 * `GET /v2/projects` lists it. Until 2026-11-27 only the list had it: a script that
 * knew a project's id read every project of its caller to find one.
 */
import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { eq } from "drizzle-orm";
import { access } from "../auth/access.ts";
import type { AppEnv } from "../context.ts";
import { projects } from "../db/schema.ts";
import { ApiError } from "../errors.ts";
import { bearerAuth, errorResponses, projectIdParam } from "../openapi.ts";
import { projectView } from "./projects.ts";
import { projectOfCallerSchema } from "./projects-list.ts";

export const getProjectRoute = createRoute({
  method: "get",
  path: "/v2/projects/{projectId}",
  operationId: "getProject",
  summary: "One project, with the caller's role in it (any role).",
  security: bearerAuth,
  middleware: [access({ role: "caller" })] as const,
  request: { params: projectIdParam },
  responses: {
    200: {
      description: "The project, as `GET /v2/projects` lists it.",
      content: { "application/json": { schema: projectOfCallerSchema } },
    },
    ...errorResponses(),
  },
});

export function registerGetProject(app: OpenAPIHono<AppEnv>) {
  app.openapi(getProjectRoute, async (c) => {
    const { projectId, role } = c.var.access;
    const [row] = await c.var.deps.db.select().from(projects).where(eq(projects.id, projectId));
    if (!row) throw new ApiError("not_found", `project '${projectId}' not found`);
    return c.json({ ...projectView(row), role }, 200);
  });
}
