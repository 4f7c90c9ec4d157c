import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import { eq } from "drizzle-orm";
import { auditSuccess } from "../audit/record.ts";
import { access } from "../auth/access.ts";
import type { AppEnv } from "../context.ts";
import { projects } from "../db/schema.ts";
import { ApiError } from "../errors.ts";
import { bearerAuth, errorResponses, projectIdParam, smallBody } from "../openapi.ts";
import { displayName, planSchema, projectSchema, projectView } from "./projects.ts";

export const updateProjectBody = z
  .strictObject({ name: displayName.optional(), plan: planSchema.optional() })
  .refine((b) => b.name !== undefined || b.plan !== undefined, "give name, plan or both")
  .openapi("ProjectChanges");

export const updateProjectRoute = createRoute({
  method: "patch",
  path: "/v2/projects/{projectId}",
  operationId: "updateProject",
  summary: "Rename a project or change its plan (owner only; audited).",
  security: bearerAuth,
  middleware: [
    access({
      role: "owner",
      audit: {
        action: "projects.update",
        target: (_c, projectId) => ({ type: "project", id: projectId }),
      },
    }),
    smallBody,
  ] as const,
  request: {
    params: projectIdParam,
    body: { required: true, content: { "application/json": { schema: updateProjectBody } } },
  },
  responses: {
    200: {
      description: "The project as it is now.",
      content: { "application/json": { schema: projectSchema } },
    },
    ...errorResponses({ 413: "The body is larger than 256 KiB." }),
  },
});

export function registerUpdateProject(app: OpenAPIHono<AppEnv>) {
  app.openapi(updateProjectRoute, async (c) => {
    const { db } = c.var.deps;
    const { projectId } = c.var.access;
    const changes = c.req.valid("json");
    const [before] = await db.select().from(projects).where(eq(projects.id, projectId));
    if (!before) throw new ApiError("not_found", `project '${projectId}' not found`);
    const after = { ...before, ...changes };
    const changed: Record<string, { from: string; to: string }> = {};
    for (const key of ["name", "plan"] as const) {
      if (before[key] !== after[key]) changed[key] = { from: before[key], to: after[key] };
    }
    await db.batch([
      db.update(projects).set(changes).where(eq(projects.id, projectId)),
      auditSuccess(c, { changed }),
    ]);
    return c.json(projectView(after), 200);
  });
}
