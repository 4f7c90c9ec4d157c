/**
 * A user's token: `POST /v2/me/token` (a user renews their own before it expires),
 * `POST /v2/projects/{projectId}/users/{userId}/token` (an operator who owns the project issues
 * one to a member: the way back for an expired token) and `DELETE` on it (that operator revokes
 * it). A new token revokes the user's others in the same batch; the new one is in the answer and
 * nowhere else. The token works in every project the user is in, so each act is recorded in every
 * one of them (`users.issue_token`, `users.revoke_token`); refusals in the route's project.
 */
import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import { eq } from "drizzle-orm";
import { createMiddleware } from "hono/factory";
import { auditSuccesses, openAudit } from "../audit/record.ts";
import { access, operatorFor, signedIn } from "../auth/access.ts";
import { prepareToken } from "../auth/tokens.ts";
import type { AppEnv, Ctx } from "../context.ts";
import { tokens, users } from "../db/schema.ts";
import { ApiError } from "../errors.ts";
import { bearerAuth, errorResponses, smallBody } from "../openapi.ts";
import { expiresAtSchema, expiryMs } from "./expiry.ts";
import { liveTokenCount, liveUserTokens, memberOr404, projectsOf, userIdParam } from "./members.ts";

export const newTokenBody = z
  .strictObject({
    expiresAt: expiresAtSchema.openapi({ description: "When the new token expires." }),
  })
  .openapi("NewUserToken");

const issuedSchema = z.object({
  id: z.string().openapi({ description: "The user's id." }),
  name: z.string(),
  expiresAt: z.string().openapi({ format: "date-time" }),
  token: z.string(),
  revoked: z.number().int().openapi({ description: "How many older tokens stopped working." }),
});

const issued = (description: string) => ({
  description,
  content: { "application/json": { schema: issuedSchema } },
});

/** `/v2/me/token`'s audit: in every project of the calling user (a service account: its own). */
const auditSelf = createMiddleware<AppEnv>(async (c, next) => {
  const principal = c.var.principal;
  const [first, ...rest] =
    principal.type === "user"
      ? await projectsOf(c.var.deps.db, principal.id)
      : [principal.projectId];
  if (first) {
    const target = { type: principal.type, id: principal.id };
    openAudit(c, { action: "users.issue_token", target, principal, projectId: first });
    const audit = c.var.audit;
    if (audit) audit.alsoIn = rest;
  }
  await next();
});

export const renewOwnTokenRoute = createRoute({
  method: "post",
  path: "/v2/me/token",
  operationId: "renewOwnToken",
  summary:
    "A new token for the calling user; the token they called with (and any other of theirs) stops working (audited).",
  security: bearerAuth,
  middleware: [signedIn, auditSelf, smallBody] as const,
  request: {
    body: { required: true, content: { "application/json": { schema: newTokenBody } } },
  },
  responses: {
    201: issued("The new token (shown once); the old one no longer works."),
    ...errorResponses({ 413: "The body is larger than 256 KiB." }),
  },
});

const operatorOwner = (action: "users.issue_token" | "users.revoke_token", what: string) =>
  [
    access({
      role: "owner",
      audit: { action, target: (c) => ({ type: "user", id: c.req.param("userId") ?? "" }) },
      refused: `only an operator of this Runlet who owns the project may ${what}`,
    }),
    operatorFor(what),
  ] as const;

export const issueUserTokenRoute = createRoute({
  method: "post",
  path: "/v2/projects/{projectId}/users/{userId}/token",
  operationId: "issueUserToken",
  summary:
    "A new token for a member (an operator who owns the project only): their other tokens stop working (audited).",
  security: bearerAuth,
  middleware: [...operatorOwner("users.issue_token", "issue tokens to users"), smallBody] as const,
  request: {
    params: userIdParam,
    body: { required: true, content: { "application/json": { schema: newTokenBody } } },
  },
  responses: {
    201: issued("The new token (shown once: hand it over securely)."),
    ...errorResponses({
      404: "The project does not exist, or the user is not a member of it.",
      413: "The body is larger than 256 KiB.",
    }),
  },
});

export const revokeUserTokenRoute = createRoute({
  method: "delete",
  path: "/v2/projects/{projectId}/users/{userId}/token",
  operationId: "revokeUserToken",
  summary:
    "Revoke a member's token, or that of a user in no project (an operator who owns the project only): it fails from the next request (audited).",
  security: bearerAuth,
  middleware: [...operatorOwner("users.revoke_token", "revoke users' tokens")] as const,
  request: { params: userIdParam },
  responses: {
    204: { description: "Revoked (or the user had no token)." },
    ...errorResponses({
      404: "The project does not exist, or the user is neither a member of it nor in no project.",
    }),
  },
});

/** Revokes `userId`'s tokens and signs a new one, in one batch with its audit entries. */
async function reissue(c: Ctx, user: { id: string; name: string }, expiresAt: string) {
  const { db, keys } = c.var.deps;
  const now = Date.now();
  const expires = expiryMs(expiresAt, now);
  const revoked = await liveTokenCount(db, user.id);
  const made = await prepareToken(keys, { subject: user.id, expiresAt: new Date(expires) });
  const expiry = new Date(expires).toISOString();
  const audit = c.var.audit;
  if (audit) audit.alsoIn = await projectsOf(db, user.id);
  await db.batch([
    db.update(tokens).set({ revokedAt: now }).where(liveUserTokens(user.id)),
    db.insert(tokens).values(made.row),
    ...(audit ? auditSuccesses(c, { name: user.name, expiresAt: expiry, revoked }) : []),
  ]);
  return { id: user.id, name: user.name, expiresAt: expiry, token: made.token, revoked };
}

export function registerUserTokens(app: OpenAPIHono<AppEnv>) {
  app.openapi(renewOwnTokenRoute, async (c) => {
    const principal = c.var.principal;
    if (principal.type !== "user") {
      throw new ApiError(
        "forbidden",
        "a service account's token is not renewed: make a new service account (runlet tokens create) and revoke this one",
      );
    }
    // A copied session cookie, worth nothing once signed out (docs/dashboard.md), would become
    // a token of up to ten years, and the user's own would stop working.
    if (principal.session) {
      throw new ApiError(
        "forbidden",
        "a dashboard session cannot renew its user's token: renew it with the token you signed in with (runlet users token)",
      );
    }
    const [user] = await c.var.deps.db
      .select({ id: users.id, name: users.name })
      .from(users)
      .where(eq(users.id, principal.id));
    if (!user) throw new ApiError("unauthorized", "token is not recognised");
    return c.json(await reissue(c, user, c.req.valid("json").expiresAt), 201);
  });

  app.openapi(issueUserTokenRoute, async (c) => {
    const { userId } = c.req.valid("param");
    const member = await memberOr404(c.var.deps, c.var.access.projectId, userId);
    return c.json(await reissue(c, member, c.req.valid("json").expiresAt), 201);
  });

  app.openapi(revokeUserTokenRoute, async (c) => {
    const { db } = c.var.deps;
    const { userId } = c.req.valid("param");
    const inProjects = await projectsOf(db, userId);
    const { user, inNoProject } = await memberOrInNone(c, userId, inProjects);
    const revoked = await liveTokenCount(db, userId);
    const audit = c.var.audit;
    if (audit) audit.alsoIn = inProjects;
    await db.batch([
      db.update(tokens).set({ revokedAt: Date.now() }).where(liveUserTokens(userId)),
      ...auditSuccesses(c, { name: user.name, revoked, ...(inNoProject ? { inNoProject } : {}) }),
    ]);
    return c.body(null, 204);
  });
}

/**
 * The user whose token `DELETE …/users/{userId}/token` revokes: a member of the project, or a
 * user in no project at all (`inProjects`: the projects the user is in). Removed from every project they were in, a user keeps a token that
 * makes projects of their own and renews itself; this route, which took members only, was then
 * the only way to revoke it, and answered 404 (docs/deploy.md, "Roles and leaving": remove them
 * from each project, then revoke their token). A user in another project is revoked from there.
 */
async function memberOrInNone(c: Ctx, userId: string, inProjects: string[]) {
  const [user] =
    inProjects.length === 0
      ? await c.var.deps.db
          .select({ id: users.id, name: users.name })
          .from(users)
          .where(eq(users.id, userId))
      : [];
  if (user) return { user, inNoProject: true };
  return {
    user: await memberOr404(c.var.deps, c.var.access.projectId, userId),
    inNoProject: false,
  };
}
