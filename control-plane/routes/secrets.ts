/**
 * Project secrets: `PUT`, `GET` and `DELETE /v2/projects/{projectId}/secrets/{name}`, owners
 * only, all audited; a value is never written to an entry, a log line or an error. `GET .../secrets` lists
 * the names (owners only, not audited: no value leaves).
 */
import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import { and, asc, eq, gt, ne, sql } from "drizzle-orm";
import {
  HOSTS_OWN,
  hostsOwnRefusal,
  SECRET_NAME,
  SECRET_NAME_RULE,
} from "../../common/secret-name.ts";
import { auditSuccess, auditSuccessIf } from "../audit/record.ts";
import { access } from "../auth/access.ts";
import type { AppEnv, Ctx } from "../context.ts";
import { insertIf } from "../db/insert-if.ts";
import { secrets, serviceAccounts, users } from "../db/schema.ts";
import { ApiError } from "../errors.ts";
import { bearerAuth, errorResponses, projectIdParam, smallBody } from "../openapi.ts";
import { optionalPage, optionalPageQuery, pageFields } from "../optional-page.ts";
import {
  MAX_SECRETS_BYTES,
  openSecret,
  raiseSecretsRevision,
  sameValue,
  sealedBytes,
  sealSecret,
  secretBytes,
  secretsFit,
  tellHosts,
} from "../secrets.ts";

export const MAX_SECRET_BYTES = 64 * 1024;

const kib = (bytes: number) => `${Math.ceil(bytes / 1024).toLocaleString("en")} KiB`;

const nameParam = projectIdParam.extend({
  name: z
    .string()
    .regex(SECRET_NAME, SECRET_NAME_RULE)
    .openapi({ param: { name: "name", in: "path" }, example: "DATABASE_URL" }),
});

const secretTarget = (c: Ctx) => ({
  type: "secret",
  id: (c.req.param("name") ?? "").slice(0, 128),
});

export const putSecretBody = z
  .strictObject({
    value: z
      .string()
      .refine(
        (v) => new TextEncoder().encode(v).byteLength <= MAX_SECRET_BYTES,
        `must be at most ${MAX_SECRET_BYTES / 1024} KiB`,
      )
      // An app gets its secrets in its environment, which ends a value at its first NUL: one
      // was stored whole and reached the app cut short there.
      .refine(
        (v) => !v.includes("\u0000"),
        "must not contain NUL (U+0000): an app's environment cannot carry it",
      ),
  })
  .openapi("SecretValue");

export const putSecretRoute = createRoute({
  method: "put",
  path: "/v2/projects/{projectId}/secrets/{name}",
  operationId: "putSecret",
  summary:
    'Create or replace a secret (owner only; audited as secrets.write, without the value). The apps\' running replicas are replaced: new calls get the new value (docs/api.md, "Secrets").',
  security: bearerAuth,
  middleware: [
    access({ role: "owner", audit: { action: "secrets.write", target: secretTarget } }),
    smallBody,
  ] as const,
  request: {
    params: nameParam,
    body: { required: true, content: { "application/json": { schema: putSecretBody } } },
  },
  responses: {
    204: { description: "Stored." },
    ...errorResponses({
      409: "The project's secrets would pass 1 MiB in all (names and values), more than an app's environment can hold.",
      413: "The body is larger than 256 KiB.",
    }),
  },
});

export const getSecretRoute = createRoute({
  method: "get",
  path: "/v2/projects/{projectId}/secrets/{name}",
  operationId: "getSecret",
  summary: "Read a secret's value (owner only; audited as secrets.read before it is returned).",
  security: bearerAuth,
  middleware: [
    access({ role: "owner", audit: { action: "secrets.read", target: secretTarget } }),
  ] as const,
  request: { params: nameParam },
  responses: {
    200: {
      description: "The secret.",
      content: {
        "application/json": { schema: z.object({ name: z.string(), value: z.string() }) },
      },
    },
    ...errorResponses({ 404: "The project or the secret does not exist." }),
  },
});

export const deleteSecretRoute = createRoute({
  method: "delete",
  path: "/v2/projects/{projectId}/secrets/{name}",
  operationId: "deleteSecret",
  summary:
    'Delete a secret (owner only; audited as secrets.delete). The apps\' running replicas are replaced: new calls do not have it (docs/api.md, "Secrets").',
  security: bearerAuth,
  middleware: [
    access({ role: "owner", audit: { action: "secrets.delete", target: secretTarget } }),
  ] as const,
  request: { params: nameParam },
  responses: {
    204: { description: "Deleted." },
    ...errorResponses({ 404: "The project or the secret does not exist." }),
  },
});

export const secretInfoSchema = z
  .object({
    name: z.string().openapi({ example: "DATABASE_URL" }),
    createdAt: z.string().openapi({ format: "date-time" }),
    updatedAt: z.string().openapi({ format: "date-time" }),
    updatedBy: z
      .string()
      .openapi({ description: "The user or service account that last wrote it." }),
    updatedByName: z
      .string()
      .openapi({ description: "Its name (a revoked service account keeps its name)." }),
  })
  .openapi("SecretInfo");

export const listSecretsRoute = createRoute({
  method: "get",
  path: "/v2/projects/{projectId}/secrets",
  operationId: "listSecrets",
  summary:
    "The project's secret names, by name (every one, or a page); never a value (owner only; not audited).",
  security: bearerAuth,
  middleware: [access({ role: "owner" })] as const,
  request: { params: projectIdParam, query: optionalPageQuery("secrets") },
  responses: {
    200: {
      description:
        "The secrets, without their values: every one without `limit` and `nextToken` (hasMore false), else a page.",
      content: {
        "application/json": {
          schema: z.object({ secrets: z.array(secretInfoSchema), ...pageFields }),
        },
      },
    },
    ...errorResponses(),
  },
});

export function registerSecrets(app: OpenAPIHono<AppEnv>) {
  app.openapi(putSecretRoute, async (c) => {
    const { name } = c.req.valid("param");
    if (HOSTS_OWN.includes(name)) throw new ApiError("bad_request", hostsOwnRefusal(name));
    const { db, derived } = c.var.deps;
    const { principal, projectId } = c.var.access;
    const { value } = c.req.valid("json");
    const now = Date.now();
    const sealed = await sealSecret(derived.secrets, projectId, name, value);
    const bytes = secretBytes(name, value);
    const row = {
      projectId,
      name,
      sealed,
      updatedBy: principal.id,
      createdAt: now,
      updatedAt: now,
    };
    // The bound is checked by the write itself: two writes at once each checked before writing
    // could together pass it. The entry goes first, in the same batch, written only if the write
    // that follows is: on the same rows, it can tell a creation from a replacement.
    const fits = secretsFit(projectId, name, bytes);
    // The value it has already: stored (and audited) again, no replica replaced.
    const same = await sameValue(db, derived.secrets, projectId, name, value);
    const exists = sql`exists (select 1 from ${secrets} where ${and(eq(secrets.projectId, projectId), eq(secrets.name, name))})`;
    const [, , revised, stored] = (await db.batch([
      auditSuccessIf(c, sql`${fits} and not ${exists}`, { created: true }),
      auditSuccessIf(c, sql`${fits} and ${exists}`, { created: false }),
      raiseSecretsRevision(db, projectId, same ? sql`${fits} and not ${same}` : fits),
      insertIf(db, secrets, row, fits)
        .onConflictDoUpdate({
          target: [secrets.projectId, secrets.name],
          set: { sealed: sql`excluded.sealed`, updatedBy: principal.id, updatedAt: now },
        })
        .returning({ name: secrets.name }),
    ])) as unknown[][];
    if (!stored?.length) {
      const others = and(eq(secrets.projectId, projectId), ne(secrets.name, name));
      const [taken] = await db.select({ bytes: sealedBytes }).from(secrets).where(others);
      const total = Number(taken?.bytes ?? 0) + bytes;
      throw new ApiError(
        "conflict",
        `the project's secrets would take ${kib(total)} of its apps' environment, over the ${kib(MAX_SECRETS_BYTES)} a process can be started with: delete some (runlet secrets delete), or keep large values elsewhere (a file in the app, a store the app reads)`,
      );
    }
    await tellHosts(c.var.deps.hosts, projectId, revised);
    return c.body(null, 204);
  });

  app.openapi(listSecretsRoute, async (c) => {
    const { projectId } = c.var.access;
    const { rows, ...paging } = await optionalPage({
      key: c.var.deps.derived.pageTokens,
      query: c.req.valid("query"),
      filters: { list: "secrets", projectId },
      // The sealed column is never selected: no value is even decrypted here.
      fetch: (after, limit) =>
        c.var.deps.db
          .select({
            name: secrets.name,
            createdAt: secrets.createdAt,
            updatedAt: secrets.updatedAt,
            updatedBy: secrets.updatedBy,
            userName: users.name,
            accountName: serviceAccounts.name,
          })
          .from(secrets)
          .leftJoin(users, eq(users.id, secrets.updatedBy))
          .leftJoin(serviceAccounts, eq(serviceAccounts.id, secrets.updatedBy))
          .where(
            and(
              eq(secrets.projectId, projectId),
              after ? gt(secrets.name, String(after.id)) : undefined,
            ),
          )
          .orderBy(asc(secrets.name))
          .limit(limit),
      position: (r) => ({ timestamp: r.createdAt, id: r.name }),
    });
    const iso = (ms: number) => new Date(ms).toISOString();
    const listed = rows.map((r) => ({
      name: r.name,
      createdAt: iso(r.createdAt),
      updatedAt: iso(r.updatedAt),
      updatedBy: r.updatedBy,
      updatedByName: r.userName ?? r.accountName ?? r.updatedBy,
    }));
    return c.json({ secrets: listed, ...paging }, 200);
  });

  app.openapi(deleteSecretRoute, async (c) => {
    const { name } = c.req.valid("param");
    const { db } = c.var.deps;
    const where = and(eq(secrets.projectId, c.var.access.projectId), eq(secrets.name, name));
    const [row] = await db.select({ name: secrets.name }).from(secrets).where(where);
    if (!row) throw new ApiError("not_found", `secret '${name}' not found`);
    const [, revised] = (await db.batch([
      db.delete(secrets).where(where),
      raiseSecretsRevision(db, c.var.access.projectId),
      auditSuccess(c),
    ])) as unknown[][];
    await tellHosts(c.var.deps.hosts, c.var.access.projectId, revised);
    return c.body(null, 204);
  });

  app.openapi(getSecretRoute, async (c) => {
    const { name } = c.req.valid("param");
    const { db, derived } = c.var.deps;
    const { projectId } = c.var.access;
    const [row] = await db
      .select({ sealed: secrets.sealed })
      .from(secrets)
      .where(and(eq(secrets.projectId, projectId), eq(secrets.name, name)));
    if (!row) throw new ApiError("not_found", `secret '${name}' not found`);
    const value = await openSecret(derived.secrets, projectId, name, row.sealed);
    // On the record before the value leaves: no unaudited read.
    await db.batch([auditSuccess(c)]);
    return c.json({ name, value }, 200);
  });
}
