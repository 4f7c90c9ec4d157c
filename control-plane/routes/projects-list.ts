/**
 * `GET /v2/projects`: the projects the caller may open, each with the caller's role in it — a
 * user's every membership, oldest project first; a service account's one project. What the
 * dashboard's project switcher and `runlet projects list` show. Not paginated: a person belongs
 * to a handful of projects, as the switcher assumes.
 */
import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import { asc, eq } from "drizzle-orm";
import { signedIn } from "../auth/access.ts";
import type { Principal, Role } from "../auth/tokens.ts";
import type { AppEnv } from "../context.ts";
import type { Database } from "../db/index.ts";
import { memberships, projects } from "../db/schema.ts";
import { bearerAuth, errorResponses } from "../openapi.ts";
import { accountRoleSchema, projectSchema, projectView } from "./projects.ts";

export const projectOfCallerSchema = projectSchema
  .extend({ role: accountRoleSchema })
  .openapi("ProjectOfCaller");

type Row = typeof projects.$inferSelect & { role: Role };

/** The projects `principal` may open, oldest first, each with the principal's role in it. */
export async function projectsOf(db: Database, principal: Principal): Promise<Row[]> {
  if (principal.type === "service_account") {
    const rows = await db.select().from(projects).where(eq(projects.id, principal.projectId));
    return rows.map((p) => ({ ...p, role: principal.role }));
  }
  const rows = await db
    .select({ project: projects, role: memberships.role })
    .from(projects)
    .innerJoin(memberships, eq(memberships.projectId, projects.id))
    .where(eq(memberships.userId, principal.id))
    .orderBy(asc(projects.createdAt), asc(projects.id));
  return rows.map((r) => ({ ...r.project, role: r.role }));
}

export const listProjectsRoute = createRoute({
  method: "get",
  path: "/v2/projects",
  operationId: "listProjects",
  summary: "The caller's projects, each with the caller's role in it.",
  security: bearerAuth,
  middleware: [signedIn] as const,
  responses: {
    200: {
      description:
        "A user's projects, oldest first (none if they belong to none); a service account's own project. Not paginated.",
      content: {
        "application/json": { schema: z.object({ projects: z.array(projectOfCallerSchema) }) },
      },
    },
    ...errorResponses(),
  },
});

export function registerListProjects(app: OpenAPIHono<AppEnv>) {
  app.openapi(listProjectsRoute, async (c) => {
    const rows = await projectsOf(c.var.deps.db, c.var.principal);
    return c.json({ projects: rows.map((r) => ({ ...projectView(r), role: r.role })) }, 200);
  });
}
