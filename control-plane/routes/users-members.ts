/**
 * A project's users: `GET /v2/projects/{projectId}/users` (owner), and on one user
 * `PUT` (add an existing user: an operator who owns the project), `PATCH` (change their role:
 * owner) and `DELETE` (remove them: owner). An operator may also add themselves to any project,
 * or change their own role there (`operatorOnSelf`), audited in it like any other change. A
 * project keeps at least one user owner: removing or demoting the last is 409. Audited as
 * `users.add`, `users.set_role`, `users.remove`.
 */
import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import { and, eq, ne, or, sql } from "drizzle-orm";
import type { AuditAction } from "../audit/actions.ts";
import { auditSuccessIf } from "../audit/record.ts";
import { access, operatorFor } from "../auth/access.ts";
import type { AppEnv, Ctx } from "../context.ts";
import { endSessionsOfRemoved } from "../dashboard/session.ts";
import { memberships, users } from "../db/schema.ts";
import { ApiError } from "../errors.ts";
import { bearerAuth, errorResponses, projectIdParam, smallBody } from "../openapi.ts";
import { optionalPage, optionalPageQuery, pageFields } from "../optional-page.ts";
import {
  anotherOwner,
  lastOwner,
  memberOr404,
  memberPosition,
  memberSchema,
  membersOf,
  userIdParam,
} from "./members.ts";
import { roleSchema } from "./projects.ts";

const audited = (action: AuditAction, operatorOnSelf?: true, refused?: string) =>
  access({
    role: "owner",
    audit: { action, target: (c) => ({ type: "user", id: c.req.param("userId") ?? "" }) },
    ...(operatorOnSelf ? { operatorOnSelf } : {}),
    ...(refused ? { refused } : {}),
  });

/**
 * The audit entry's details say so when an operator who does not own the project acted on
 * their own membership there (AccessRule.operatorOnSelf): how they entered it.
 */
const entered = (c: Ctx) => (c.var.access.role === "owner" ? {} : { asOperator: true });

const memberAnswer = (description: string) => ({
  description,
  content: { "application/json": { schema: memberSchema } },
});

export const listUsersRoute = createRoute({
  method: "get",
  path: "/v2/projects/{projectId}/users",
  operationId: "listProjectUsers",
  summary: "The project's users: owners first, then by name; never a token (every one, or a page).",
  security: bearerAuth,
  middleware: [access({ role: "owner" })] as const,
  request: { params: projectIdParam, query: optionalPageQuery("users") },
  responses: {
    200: {
      description:
        "The project's users: every one without `limit` and `nextToken` (hasMore false), else a page.",
      content: {
        "application/json": { schema: z.object({ users: z.array(memberSchema), ...pageFields }) },
      },
    },
    ...errorResponses(),
  },
});

export const roleBody = z.strictObject({ role: roleSchema }).openapi("ProjectRole");

export const addUserRoute = createRoute({
  method: "put",
  path: "/v2/projects/{projectId}/users/{userId}",
  operationId: "addProjectUser",
  summary:
    "Add an existing user to the project: an operator who owns the project; or an operator adds themselves to any project (audited).",
  security: bearerAuth,
  middleware: [
    audited(
      "users.add",
      true,
      "only an operator of this Runlet who owns the project may add users to a project",
    ),
    operatorFor("add users to a project"),
    smallBody,
  ] as const,
  request: {
    params: userIdParam,
    body: { required: true, content: { "application/json": { schema: roleBody } } },
  },
  responses: {
    201: memberAnswer("The user, now a member with that role."),
    ...errorResponses({
      404: "The project or the user does not exist.",
      409: "The user is a member already (change their role with PATCH).",
      413: "The body is larger than 256 KiB.",
    }),
  },
});

export const setRoleRoute = createRoute({
  method: "patch",
  path: "/v2/projects/{projectId}/users/{userId}",
  operationId: "setProjectUserRole",
  summary:
    "Change a member's role (audited): an owner, or an operator their own; the last owner cannot be demoted.",
  security: bearerAuth,
  middleware: [audited("users.set_role", true), smallBody] as const,
  request: {
    params: userIdParam,
    body: { required: true, content: { "application/json": { schema: roleBody } } },
  },
  responses: {
    200: memberAnswer("The member with their role now."),
    ...errorResponses({
      404: "The project does not exist, or the user is not a member of it.",
      409: "The user is the project's last owner.",
      413: "The body is larger than 256 KiB.",
    }),
  },
});

export const removeUserRoute = createRoute({
  method: "delete",
  path: "/v2/projects/{projectId}/users/{userId}",
  operationId: "removeProjectUser",
  summary: "Remove a user from the project (audited); the last owner cannot be removed.",
  security: bearerAuth,
  middleware: [audited("users.remove")] as const,
  request: { params: userIdParam },
  responses: {
    204: { description: "Removed: the project refuses their token from the next request." },
    ...errorResponses({
      404: "The project does not exist, or the user is not a member of it.",
      409: "The user is the project's last owner.",
    }),
  },
});

export function registerProjectUsers(app: OpenAPIHono<AppEnv>) {
  app.openapi(listUsersRoute, async (c) => {
    const { projectId } = c.var.access;
    const { rows, ...paging } = await optionalPage({
      key: c.var.deps.derived.pageTokens,
      query: c.req.valid("query"),
      filters: { list: "users", projectId },
      fetch: (after, limit) => membersOf(c.var.deps, projectId, undefined, { after, limit }),
      position: memberPosition,
    });
    return c.json({ users: rows, ...paging }, 200);
  });

  app.openapi(addUserRoute, async (c) => {
    const { db } = c.var.deps;
    const { projectId } = c.var.access;
    const { userId } = c.req.valid("param");
    const { role } = c.req.valid("json");
    const [user] = await db.select().from(users).where(eq(users.id, userId));
    if (!user) throw new ApiError("not_found", `user '${userId}' not found`);
    const [already] = await db
      .select({ role: memberships.role })
      .from(memberships)
      .where(and(eq(memberships.projectId, projectId), eq(memberships.userId, userId)));
    if (already) {
      throw new ApiError(
        "conflict",
        `${user.name} (${userId}) is already a member of this project, as ${already.role}: change their role with 'runlet users role' (PATCH)`,
      );
    }
    const isNew = sql`not exists (select 1 from ${memberships} where ${memberships.projectId} = ${projectId} and ${memberships.userId} = ${userId})`;
    const done = (await db.batch([
      auditSuccessIf(c, isNew, { name: user.name, role, ...entered(c) }),
      db
        .insert(memberships)
        .values({ projectId, userId, role })
        .onConflictDoNothing()
        .returning({ userId: memberships.userId }),
    ])) as unknown[];
    // Another request added them between the check above and this batch: theirs stands.
    if ((done[1] as unknown[]).length === 0) {
      throw new ApiError(
        "conflict",
        `${user.name} (${userId}) was added to this project by another request just now: see 'runlet users list'`,
      );
    }
    return c.json(await memberOr404(c.var.deps, projectId, userId), 201);
  });

  app.openapi(setRoleRoute, async (c) => {
    const { db } = c.var.deps;
    const { projectId } = c.var.access;
    const { userId } = c.req.valid("param");
    const { role } = c.req.valid("json");
    const member = await memberOr404(c.var.deps, projectId, userId);
    const demoting = member.role === "owner" && role === "member";
    if (demoting && !(await hasAnotherOwner(c, projectId, userId))) {
      throw lastOwner(member.name, userId, "demote");
    }
    const where = and(eq(memberships.projectId, projectId), eq(memberships.userId, userId));
    // The rule holds in the statement too: two owners demoting each other at once leave one.
    await db.batch([
      auditSuccessIf(c, demoting ? anotherOwner(projectId, userId) : sql`1`, {
        name: member.name,
        from: member.role,
        to: role,
        ...entered(c),
      }),
      db
        .update(memberships)
        .set({ role })
        .where(demoting ? and(where, anotherOwner(projectId, userId)) : where),
    ]);
    const now = await memberOr404(c.var.deps, projectId, userId);
    if (now.role !== role) throw lastOwner(member.name, userId, "demote");
    return c.json(now, 200);
  });

  app.openapi(removeUserRoute, async (c) => {
    const { db } = c.var.deps;
    const { projectId } = c.var.access;
    const { userId } = c.req.valid("param");
    const member = await memberOr404(c.var.deps, projectId, userId);
    if (member.role === "owner" && !(await hasAnotherOwner(c, projectId, userId))) {
      throw lastOwner(member.name, userId, "remove");
    }
    const allowed = or(ne(memberships.role, "owner"), anotherOwner(projectId, userId));
    await db.batch([
      auditSuccessIf(c, member.role === "owner" ? anotherOwner(projectId, userId) : sql`1`, {
        name: member.name,
        role: member.role,
      }),
      db
        .delete(memberships)
        .where(and(eq(memberships.projectId, projectId), eq(memberships.userId, userId), allowed)),
      endSessionsOfRemoved(db, userId),
    ]);
    const [still] = await membersOf(c.var.deps, projectId, userId);
    if (still) throw lastOwner(member.name, userId, "remove");
    return c.body(null, 204);
  });
}

async function hasAnotherOwner(c: Ctx, projectId: string, userId: string): Promise<boolean> {
  const [row] = await c.var.deps.db
    .select({ other: memberships.userId })
    .from(memberships)
    .where(
      and(
        eq(memberships.projectId, projectId),
        eq(memberships.role, "owner"),
        ne(memberships.userId, userId),
      ),
    )
    .limit(1);
  return row !== undefined;
}
