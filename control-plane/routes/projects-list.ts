/**
 * `GET /v2/projects`: the projects the caller may open, each with the caller's role in it — a
 * user's every membership, oldest project first; a service account's one project. What the
 * dashboard's project switcher and `runlet projects list` show. Not paginated: a person belongs
 * to a handful of projects, as the switcher assumes. `?all=true`, for an operator: every
 * project of this Runlet, `role` null where they are not in it (they may add themselves:
 * users-members.ts).
 */
import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import { and, asc, eq, isNull } from "drizzle-orm";
import { isOperator, signedIn } from "../auth/access.ts";
import type { Principal, Role } from "../auth/tokens.ts";
import type { AppEnv } from "../context.ts";
import type { Database } from "../db/index.ts";
import { memberships, projects } from "../db/schema.ts";
import { ApiError } from "../errors.ts";
import { bearerAuth, errorResponses } from "../openapi.ts";
import { accountRoleSchema, projectSchema, projectView } from "./projects.ts";

export const projectOfCallerSchema = projectSchema
  .extend({ role: accountRoleSchema })
  .openapi("ProjectOfCaller");

/** A project of `?all=true`: `role` null where the operator is not in it. */
const projectListedSchema = projectSchema
  .extend({ role: accountRoleSchema.nullable() })
  .openapi("ProjectListed");

type Row = typeof projects.$inferSelect & { role: Role };

/** The projects `principal` may open, oldest first, each with the principal's role in it. */
export async function projectsOf(db: Database, principal: Principal): Promise<Row[]> {
  if (principal.type === "service_account") {
    const rows = await db
      .select()
      .from(projects)
      .where(and(eq(projects.id, principal.projectId), isNull(projects.deletedAt)));
    return rows.map((p) => ({ ...p, role: principal.role }));
  }
  const rows = await db
    .select({ project: projects, role: memberships.role })
    .from(projects)
    .innerJoin(memberships, eq(memberships.projectId, projects.id))
    .where(and(eq(memberships.userId, principal.id), isNull(projects.deletedAt)))
    .orderBy(asc(projects.createdAt), asc(projects.id));
  return rows.map((r) => ({ ...r.project, role: r.role }));
}

/** Every project of this Runlet not deleted, oldest first, with `userId`'s role where they have one. */
async function everyProject(db: Database, userId: string) {
  const rows = await db
    .select({ project: projects, role: memberships.role })
    .from(projects)
    .leftJoin(
      memberships,
      and(eq(memberships.projectId, projects.id), eq(memberships.userId, userId)),
    )
    .where(isNull(projects.deletedAt))
    .orderBy(asc(projects.createdAt), asc(projects.id));
  return rows.map((r) => ({ ...projectView(r.project), role: r.role }));
}

export const listProjectsRoute = createRoute({
  method: "get",
  path: "/v2/projects",
  operationId: "listProjects",
  summary: "The caller's projects, each with the caller's role in it.",
  security: bearerAuth,
  middleware: [signedIn] as const,
  request: {
    query: z.strictObject({
      all: z.enum(["true", "false"]).optional().openapi({
        description:
          "true: every project of this Runlet, for an operator (403 for anyone else), `role` null where they are not in it",
      }),
    }),
  },
  responses: {
    200: {
      description:
        "A user's projects, oldest first (none if they belong to none); a service account's own project. Not paginated.",
      content: {
        "application/json": { schema: z.object({ projects: z.array(projectListedSchema) }) },
      },
    },
    ...errorResponses(),
  },
});

export function registerListProjects(app: OpenAPIHono<AppEnv>) {
  app.openapi(listProjectsRoute, async (c) => {
    const { db } = c.var.deps;
    const { principal } = c.var;
    if (c.req.valid("query").all === "true") {
      if (!(await isOperator(db, principal)))
        throw new ApiError("forbidden", "only an operator of this Runlet may list every project");
      return c.json({ projects: await everyProject(db, principal.id) }, 200);
    }
    const rows = await projectsOf(db, principal);
    return c.json({ projects: rows.map((r) => ({ ...projectView(r), role: r.role })) }, 200);
  });
}
