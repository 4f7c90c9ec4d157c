/**
 * Service accounts: `POST`, `GET` and `DELETE /v2/projects/{projectId}/service-accounts[/{saId}]`.
 * Owners only — a member must not mint tokens, least of all owner tokens.
 */
import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import { and, desc, eq, gt, isNull, lt, or, sql } from "drizzle-orm";
import { newId } from "../../common/ids.ts";
import { auditSuccess, auditSuccessIf } from "../audit/record.ts";
import { access } from "../auth/access.ts";
import { keyRetiredAt, type SigningKeys } from "../auth/signing.ts";
import { prepareToken } from "../auth/tokens.ts";
import type { AppEnv } from "../context.ts";
import { insertIf } from "../db/insert-if.ts";
import { namesMatch } from "../db/names-match.ts";
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
    ...errorResponses({
      409: "An active service account of the project has this name (the message names its id): revoke it, or pick another name.",
      413: "The body is larger than 256 KiB.",
    }),
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
    // One live account a name in a project, in either case (lists, the dashboard and the audit
    // log could not tell two apart, nor can a reader `ci` and `CI`); a revoked or expired one
    // frees it. Checked by the writes themselves, in one transaction: two creates at once make
    // one. Not a unique index: databases from before may hold live names twice, and such an
    // index could not be made on them.
    const live = and(
      eq(serviceAccounts.projectId, projectId),
      namesMatch(serviceAccounts.name, name),
      isNull(serviceAccounts.revokedAt),
      gt(serviceAccounts.expiresAt, now),
    );
    const free = sql`not exists (select 1 from ${serviceAccounts} where ${live})`;
    const ours = sql`exists (select 1 from ${serviceAccounts} where ${serviceAccounts.id} = ${id})`;
    const account = {
      id,
      projectId,
      name,
      role,
      tokenId: issued.id,
      createdBy: principal.id,
      createdAt: now,
      expiresAt: expires,
    };
    const [, made] = (await db.batch([
      insertIf(db, tokens, issued.row, free),
      insertIf(db, serviceAccounts, account, free).returning({ id: serviceAccounts.id }),
      auditSuccessIf(c, ours, { name, role, expiresAt: new Date(expires).toISOString() }),
    ])) as unknown[][];
    if (!made?.length) {
      const [other] = await db
        .select({ id: serviceAccounts.id, name: serviceAccounts.name })
        .from(serviceAccounts)
        .where(live);
      const otherId = other?.id ?? "(revoked since: try again)";
      if (audit) audit.target = { type: "service_account", id: "(new)" }; // none was made
      throw new ApiError(
        "conflict",
        `a service account named '${other?.name ?? name}' is active in this project already (${otherId}): revoke it first (runlet tokens revoke ${otherId}, or the dashboard's API keys page), or pick another name`,
      );
    }
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
