/**
 * `DELETE /v2/projects/{projectId}`: deletes a project that has no apps left (owner only;
 * audited). Its apps must go first (`DELETE …/apps/{name}`, which takes their versions and their
 * queued and running runs): with none left there is nothing running and no run to lose, so
 * nothing else blocks. In one batch, each write conditioned on the project's row being marked
 * by this very batch (an app deployed meanwhile leaves everything as it was): the row is marked
 * deleted (and kept: its audit entries and runs still name it), its service accounts and their
 * tokens revoked, its secrets, memberships and sign-in links deleted, the dashboard sessions of
 * users left in no project ended, and the success entry written. From then on every route
 * answers 404 for it (`roleIn`), whoever asks.
 */
import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { and, asc, count, eq, inArray, isNotNull, isNull, ne, type SQL, sql } from "drizzle-orm";
import { auditSuccessIf } from "../audit/record.ts";
import { access } from "../auth/access.ts";
import type { AppEnv } from "../context.ts";
import type { Database } from "../db/index.ts";
import {
  apps,
  memberships,
  projects,
  secrets,
  serviceAccounts,
  signInLinks,
  tokens,
} from "../db/schema.ts";
import { ApiError, projectDeleted } from "../errors.ts";
import { bearerAuth, errorResponses, projectIdParam } from "../openapi.ts";

/** How many of a project's apps the 409 names before "and N more". */
const NAMED_APPS = 5;

export const deleteProjectRoute = createRoute({
  method: "delete",
  path: "/v2/projects/{projectId}",
  operationId: "deleteProject",
  summary:
    "Delete a project with no apps: its service accounts are revoked, its secrets and memberships go (owner only; audited).",
  security: bearerAuth,
  middleware: [
    access({
      role: "owner",
      audit: {
        action: "projects.delete",
        target: (_c, projectId) => ({ type: "project", id: projectId }),
      },
    }),
  ] as const,
  request: { params: projectIdParam },
  responses: {
    204: { description: "Deleted: every route answers 404 for the project from now on." },
    ...errorResponses({
      404: "The project does not exist, or was deleted.",
      409: "The project still has apps (the message names them): delete them first.",
    }),
  },
});

/** The 409 of a project that still has apps, naming the first few, or null when it has none. */
async function appsLeft(db: Database, projectId: string): Promise<string | null> {
  const [[counted], named] = (await db.batch([
    db.select({ n: count() }).from(apps).where(eq(apps.projectId, projectId)),
    db
      .select({ name: apps.name })
      .from(apps)
      .where(eq(apps.projectId, projectId))
      .orderBy(asc(apps.name))
      .limit(NAMED_APPS),
  ])) as [Array<{ n: number }>, Array<{ name: string }>];
  const total = counted?.n ?? 0;
  if (total === 0) return null;
  const names = named.map((a) => `'${a.name}'`).join(", ");
  const more = total > named.length ? ` and ${total - named.length} more` : "";
  const howMany = total === 1 ? "an app" : `${total} apps`;
  return `project '${projectId}' still has ${howMany}: ${names}${more}. Delete ${total === 1 ? "it" : "each"} first (runlet apps delete NAME, or DELETE /v2/projects/${projectId}/apps/NAME), then the project`;
}

export function registerDeleteProject(app: OpenAPIHono<AppEnv>) {
  app.openapi(deleteProjectRoute, async (c) => {
    const { db } = c.var.deps;
    const { projectId, principal } = c.var.access;
    const refused = await appsLeft(db, projectId);
    if (refused) throw new ApiError("conflict", refused);
    const [row] = await db
      .select({ name: projects.name })
      .from(projects)
      .where(eq(projects.id, projectId));
    const name = row?.name ?? "";
    const now = Date.now();
    // Whether this batch marked the row: every other write of it is conditioned on it.
    const marked = sql`exists (select 1 from ${projects} where ${and(
      eq(projects.id, projectId),
      eq(projects.deletedAt, now),
      eq(projects.deletedBy, principal.id),
    )})`;
    const when = (condition: SQL | undefined) => and(condition, marked);
    const ofProject = sql`select ${memberships.userId} from ${memberships} where ${eq(memberships.projectId, projectId)}`;
    const elsewhere = sql`exists (select 1 from ${memberships} where ${and(
      sql`${memberships.userId} = ${tokens.subject}`,
      ne(memberships.projectId, projectId),
    )})`;
    const [done] = (await db.batch([
      db
        .update(projects)
        .set({ deletedAt: now, deletedBy: principal.id })
        .where(
          and(
            eq(projects.id, projectId),
            isNull(projects.deletedAt),
            sql`not exists (select 1 from ${apps} where ${eq(apps.projectId, projectId)})`,
          ),
        )
        .returning({ id: projects.id }),
      // Service accounts: their tokens fail from the next request, and so do the dashboard
      // sessions made from them (a session's parent is revoked).
      db
        .update(tokens)
        .set({ revokedAt: now })
        .where(
          when(
            and(
              isNull(tokens.revokedAt),
              inArray(
                tokens.id,
                db
                  .select({ id: serviceAccounts.tokenId })
                  .from(serviceAccounts)
                  .where(eq(serviceAccounts.projectId, projectId)),
              ),
            ),
          ),
        ),
      db
        .update(serviceAccounts)
        .set({ revokedAt: now })
        .where(
          when(and(eq(serviceAccounts.projectId, projectId), isNull(serviceAccounts.revokedAt))),
        ),
      db.delete(secrets).where(when(eq(secrets.projectId, projectId))),
      // The dashboard sessions of its users who are in no other project end (as a removal from
      // a user's last project ends them); the others' sessions show their other projects.
      db
        .update(tokens)
        .set({ revokedAt: now })
        .where(
          when(
            and(
              isNotNull(tokens.parentId),
              isNull(tokens.revokedAt),
              sql`${tokens.subject} in (${ofProject})`,
              sql`not ${elsewhere}`,
            ),
          ),
        ),
      db.delete(memberships).where(when(eq(memberships.projectId, projectId))),
      db.delete(signInLinks).where(when(eq(signInLinks.projectId, projectId))),
      auditSuccessIf(c, marked, { name }),
    ])) as [Array<{ id: string }>];
    if (done.length === 0) {
      // An app was deployed since the check, or another delete came first.
      const since = await appsLeft(db, projectId);
      if (since) throw new ApiError("conflict", since);
      throw new ApiError("not_found", projectDeleted(projectId));
    }
    return c.body(null, 204);
  });
}
