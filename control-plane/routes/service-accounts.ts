/**
 * Service accounts: `POST`, `GET` and `DELETE /v2/projects/{projectId}/service-accounts[/{saId}]`.
 * Owners only — a member must not mint tokens, least of all owner tokens.
 */
import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import { and, desc, eq, lt, or } from "drizzle-orm";
import { newId } from "../../common/ids.ts";
import { auditSuccess } from "../audit/record.ts";
import { access } from "../auth/access.ts";
import { keyRetiredAt, type SigningKeys } from "../auth/signing.ts";
import { prepareToken } from "../auth/tokens.ts";
import type { AppEnv } from "../context.ts";
import { principalNames } from "../db/principal-names.ts";
import { serviceAccounts, tokens } from "../db/schema.ts";
import { ApiError } from "../errors.ts";
import { bearerAuth, errorResponses, projectIdParam, smallBody } from "../openapi.ts";
import { optionalPage, optionalPageQuery, pageFields } from "../optional-page.ts";
import { expiresAtSchema, expiryMs } from "./expiry.ts";
import { accountRoleSchema, displayName } from "./projects.ts";

export const createServiceAccountBody = z
  .strictObject({
    name: displayName,
    expiresAt: expiresAtSchema,
    role: accountRoleSchema.optional(),
  })
  .openapi("NewServiceAccount");

export const serviceAccountSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    role: accountRoleSchema,
    createdAt: z.string().openapi({ format: "date-time" }),
    expiresAt: z.string().openapi({ format: "date-time" }),
    revokedAt: z.string().nullable().openapi({ format: "date-time" }),
    createdBy: z.string(),
    createdByName: z.string().nullable().openapi({
      description:
        "The name of the user (or service account) that made it; null once that one is deleted.",
    }),
    keyRetiredAt: z.string().nullable().openapi({
      format: "date-time",
      description:
        "When the signing key its token was signed with was retired (`runlet keys retire`): its token is refused (401) since, and the account needs a new one; null while the key verifies. Worked out from when the token was made.",
    }),
    lastUsedAt: z.string().nullable().openapi({
      format: "date-time",
      description:
        "When its token last authenticated a request to the control plane, to the minute (the run API asks the control plane about a token at most every 10 s); null if never.",
    }),
  })
  .openapi("ServiceAccount");

function view(
  row: typeof serviceAccounts.$inferSelect,
  token: { createdAt: number; lastUsedAt: number | null },
  keys: SigningKeys,
  names: Map<string, string>,
): z.infer<typeof serviceAccountSchema> {
  const { lastUsedAt } = token;
  const iso = (ms: number) => new Date(ms).toISOString();
  return {
    id: row.id,
    name: row.name,
    role: row.role,
    createdAt: iso(row.createdAt),
    expiresAt: iso(row.expiresAt),
    revokedAt: row.revokedAt === null ? null : iso(row.revokedAt),
    createdBy: row.createdBy,
    createdByName: names.get(row.createdBy) ?? null,
    keyRetiredAt: keyRetiredAt(keys, token.createdAt),
    lastUsedAt: lastUsedAt === null ? null : iso(lastUsedAt),
  };
}

const saIdParam = projectIdParam.extend({ saId: z.string().max(64) });

export const createServiceAccountRoute = createRoute({
  method: "post",
  path: "/v2/projects/{projectId}/service-accounts",
  operationId: "createServiceAccount",
  summary: "Create a service account; its token is in this answer and nowhere else (audited).",
  security: bearerAuth,
  middleware: [
    access({
      role: "owner",
      audit: {
        action: "service_accounts.create",
        target: () => ({ type: "service_account", id: "(new)" }),
      },
    }),
    smallBody,
  ] as const,
  request: {
    params: projectIdParam,
    body: {
      required: true,
      content: { "application/json": { schema: createServiceAccountBody } },
    },
  },
  responses: {
    201: {
      description: "The account and its token (shown once: store it securely).",
      content: {
        "application/json": {
          schema: z.object({
            id: z.string(),
            name: z.string(),
            role: accountRoleSchema,
            expiresAt: z.string().openapi({ format: "date-time" }),
            token: z.string(),
          }),
        },
      },
    },
    ...errorResponses({ 413: "The body is larger than 256 KiB." }),
  },
});

export const listServiceAccountsRoute = createRoute({
  method: "get",
  path: "/v2/projects/{projectId}/service-accounts",
  operationId: "listServiceAccounts",
  summary:
    "The project's service accounts, newest first, revoked ones included; never tokens (every one, or a page).",
  security: bearerAuth,
  middleware: [access({ role: "owner" })] as const,
  request: { params: projectIdParam, query: optionalPageQuery("service accounts") },
  responses: {
    200: {
      description:
        "The accounts: every one without `limit` and `nextToken` (hasMore false), else a page.",
      content: {
        "application/json": {
          schema: z.object({ serviceAccounts: z.array(serviceAccountSchema), ...pageFields }),
        },
      },
    },
    ...errorResponses(),
  },
});

export const revokeServiceAccountRoute = createRoute({
  method: "delete",
  path: "/v2/projects/{projectId}/service-accounts/{saId}",
  operationId: "revokeServiceAccount",
  summary: "Revoke a service account: its token stops working at once (audited).",
  security: bearerAuth,
  middleware: [
    access({
      role: "owner",
      audit: {
        action: "service_accounts.revoke",
        target: (c) => ({ type: "service_account", id: c.req.param("saId") ?? "" }),
      },
    }),
  ] as const,
  request: { params: saIdParam },
  responses: {
    204: { description: "Revoked (or already revoked)." },
    ...errorResponses({ 404: "The project or the service account does not exist." }),
  },
});

export function registerServiceAccounts(app: OpenAPIHono<AppEnv>) {
  app.openapi(createServiceAccountRoute, async (c) => {
    const { db, keys } = c.var.deps;
    const { principal, projectId } = c.var.access;
    const { name, expiresAt, role = "member" } = c.req.valid("json");
    const now = Date.now();
    const expires = expiryMs(expiresAt, now);
    const id = newId("sa", now);
    const audit = c.var.audit;
    if (audit) audit.target = { type: "service_account", id };
    const issued = await prepareToken(keys, {
      subject: id,
      projectId,
      expiresAt: new Date(expires),
    });
    await db.batch([
      db.insert(tokens).values(issued.row),
      db.insert(serviceAccounts).values({
        id,
        projectId,
        name,
        role,
        tokenId: issued.id,
        createdBy: principal.id,
        createdAt: now,
        expiresAt: expires,
      }),
      auditSuccess(c, { name, role, expiresAt: new Date(expires).toISOString() }),
    ]);
    return c.json(
      { id, name, role, expiresAt: new Date(expires).toISOString(), token: issued.token },
      201,
    );
  });

  app.openapi(listServiceAccountsRoute, async (c) => {
    const { projectId } = c.var.access;
    const { rows, ...paging } = await optionalPage({
      key: c.var.deps.derived.pageTokens,
      query: c.req.valid("query"),
      filters: { list: "service-accounts", projectId },
      fetch: (after, limit) =>
        c.var.deps.db
          .select({
            account: serviceAccounts,
            token: { createdAt: tokens.createdAt, lastUsedAt: tokens.lastUsedAt },
          })
          .from(serviceAccounts)
          .innerJoin(tokens, eq(tokens.id, serviceAccounts.tokenId))
          .where(
            and(
              eq(serviceAccounts.projectId, projectId),
              after &&
                or(
                  lt(serviceAccounts.createdAt, after.timestamp),
                  and(
                    eq(serviceAccounts.createdAt, after.timestamp),
                    lt(serviceAccounts.id, String(after.id)),
                  ),
                ),
            ),
          )
          .orderBy(desc(serviceAccounts.createdAt), desc(serviceAccounts.id))
          .limit(limit),
      position: (r) => ({ timestamp: r.account.createdAt, id: r.account.id }),
    });
    const names = await principalNames(
      c.var.deps.db,
      rows.map((r) => r.account.createdBy),
    );
    const listed = rows.map((r) => view(r.account, r.token, c.var.deps.keys, names));
    return c.json({ serviceAccounts: listed, ...paging }, 200);
  });

  app.openapi(revokeServiceAccountRoute, async (c) => {
    const { db } = c.var.deps;
    const { projectId } = c.var.access;
    const { saId } = c.req.valid("param");
    const [account] = await db
      .select()
      .from(serviceAccounts)
      .where(and(eq(serviceAccounts.id, saId), eq(serviceAccounts.projectId, projectId)));
    if (!account) {
      throw new ApiError("not_found", `service account '${saId}' not found in this project`);
    }
    const now = Date.now();
    const revokedAt = account.revokedAt ?? now;
    await db.batch([
      db.update(serviceAccounts).set({ revokedAt }).where(eq(serviceAccounts.id, saId)),
      db.update(tokens).set({ revokedAt }).where(eq(tokens.id, account.tokenId)),
      auditSuccess(c, { name: account.name, alreadyRevoked: account.revokedAt !== null }),
    ]);
    return c.body(null, 204);
  });
}
