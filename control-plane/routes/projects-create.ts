import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import { newId } from "../../common/ids.ts";
import { auditSuccess, openAudit } from "../audit/record.ts";
import { signedIn } from "../auth/access.ts";
import type { AppEnv } from "../context.ts";
import { memberships, projects } from "../db/schema.ts";
import { ApiError } from "../errors.ts";
import { bearerAuth, errorResponses, smallBody } from "../openapi.ts";
import { displayName, planSchema, projectSchema, projectView } from "./projects.ts";

export const createProjectBody = z
  .strictObject({ name: displayName, plan: planSchema.optional() })
  .openapi("NewProject");

export const createProjectRoute = createRoute({
  method: "post",
  path: "/v2/projects",
  operationId: "createProject",
  summary: "Create a project; the calling user becomes its owner (audited).",
  security: bearerAuth,
  // Authentication comes before validation: an anonymous caller gets 401 whatever it sends.
  middleware: [signedIn, smallBody] as const,
  request: {
    body: { required: true, content: { "application/json": { schema: createProjectBody } } },
  },
  responses: {
    201: {
      description: "The new project.",
      content: { "application/json": { schema: projectSchema } },
    },
    ...errorResponses({ 413: "The body is larger than 256 KiB." }),
  },
});

export function registerCreateProject(app: OpenAPIHono<AppEnv>) {
  app.openapi(createProjectRoute, async (c) => {
    const { db } = c.var.deps;
    const principal = c.var.principal;
    if (principal.type !== "user") {
      // A refused attempt by a known caller is on the record: in the account's own project,
      // the only one it belongs to (a user's invalid create has no project to hold an entry).
      openAudit(c, {
        action: "projects.create",
        target: { type: "project", id: "(new)" },
        principal,
        projectId: principal.projectId,
      });
      throw new ApiError(
        "forbidden",
        "a service account belongs to one project and cannot create others",
      );
    }
    const { name, plan = "hobby" } = c.req.valid("json");
    const row = { id: newId("prj"), name, plan, createdAt: Date.now() };
    openAudit(c, {
      action: "projects.create",
      target: { type: "project", id: row.id },
      principal,
      projectId: row.id,
    });
    await db.batch([
      db.insert(projects).values(row),
      db.insert(memberships).values({ projectId: row.id, userId: principal.id, role: "owner" }),
      auditSuccess(c, { name, plan }),
    ]);
    return c.json(projectView(row), 201);
  });
}
