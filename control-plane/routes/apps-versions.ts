/**
 * `GET /v2/projects/{projectId}/apps/{appName}/versions`: an app's deployed versions, newest
 * first, with who deployed them and whether their files are kept, so that one can be deployed
 * again (apps-redeploy.ts) (members and owners). Every one, or with `limit` a page of them (an
 * app deployed at each commit has thousands: the dashboard's page showed 1,001 rows).
 */
import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import { and, desc, eq, lt } from "drizzle-orm";
import { access } from "../auth/access.ts";
import { isKept, KEPT_BUNDLES } from "../bundles.ts";
import type { AppEnv } from "../context.ts";
import { principalNames } from "../db/principal-names.ts";
import { deployments } from "../db/schema.ts";
import { bearerAuth, errorResponses, projectIdParam } from "../openapi.ts";
import { optionalPage, optionalPageQuery, pageFields } from "../optional-page.ts";
import { appOr404 } from "./app-lookup.ts";

const versionSchema = z
  .object({
    version: z.number().int(),
    runtime: z.enum(["managed", "custom"]),
    deployedBy: z.object({ id: z.string(), name: z.string().nullable() }),
    createdAt: z.string().openapi({ format: "date-time" }),
    files: z.number().int(),
    bytes: z.number().int(),
    digest: z.string().nullable().openapi({
      description:
        "What identifies its files (SHA-256, hex), as the app's own `digest` does: two versions with the same are the same code.",
    }),
    rolledBackFrom: z.number().int().nullable().openapi({
      description:
        "A rollback's: the version whose files it deployed again (…/versions/{version}/redeploy); null for a deploy of its own, or one before 2026-11-27.",
    }),
    kept: z.boolean().openapi({
      description: `Whether its files are kept (an app's ${KEPT_BUNDLES} newest versions' are): one that is can be deployed again, a rollback (…/versions/{version}/redeploy), unless it is the live one.`,
    }),
  })
  .openapi("AppVersion");

export const listAppVersionsRoute = createRoute({
  method: "get",
  path: "/v2/projects/{projectId}/apps/{appName}/versions",
  operationId: "listAppVersions",
  summary: "An app's deployed versions, newest first, with who deployed each (members and owners).",
  security: bearerAuth,
  middleware: [access({ role: "member" })] as const,
  request: {
    params: projectIdParam.extend({ appName: z.string().max(64) }),
    query: optionalPageQuery("versions"),
  },
  responses: {
    200: {
      description: "The versions, or a page of them.",
      content: {
        "application/json": {
          schema: z.object({ versions: z.array(versionSchema), ...pageFields }),
        },
      },
    },
    ...errorResponses({ 404: "The project or the app does not exist." }),
  },
});

export function registerListAppVersions(app: OpenAPIHono<AppEnv>) {
  app.openapi(listAppVersionsRoute, async (c) => {
    const { db } = c.var.deps;
    const { projectId } = c.var.access;
    const { appName } = c.req.valid("param");
    const found = await appOr404(db, projectId, appName, c.var.access.role);
    const { rows, ...paging } = await optionalPage({
      key: c.var.deps.derived.pageTokens,
      query: c.req.valid("query"),
      filters: { list: "versions", projectId, app: appName },
      fetch: (after, limit) =>
        db
          .select()
          .from(deployments)
          .where(
            and(
              eq(deployments.appId, found.id),
              after ? lt(deployments.version, Number(after.id)) : undefined,
            ),
          )
          .orderBy(desc(deployments.version))
          .limit(limit),
      position: (r) => ({ timestamp: r.createdAt, id: r.version }),
    });
    const names = await principalNames(
      db,
      rows.map((r) => r.deployedBy),
    );
    const versions = rows.map((r) => ({
      version: r.version,
      runtime: ((r.config as { runtime?: string }).runtime ?? found.runtime) as
        | "managed"
        | "custom",
      deployedBy: { id: r.deployedBy, name: names.get(r.deployedBy) ?? null },
      createdAt: new Date(r.createdAt).toISOString(),
      files: r.files,
      bytes: r.bytes,
      digest: r.digest,
      rolledBackFrom: r.rolledBackFrom,
      kept: isKept(r.version, found.currentVersion),
    }));
    return c.json({ versions, ...paging }, 200);
  });
}
