import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import { and, asc, eq, gt, type SQL } from "drizzle-orm";
import type { AppConfig } from "../../common/app-config.ts";
import { DEFAULT_QUEUE_TIMEOUT_S, DEFAULT_START_TIMEOUT_S } from "../../common/app-limits.ts";
import { access } from "../auth/access.ts";
import type { AppEnv } from "../context.ts";
import type { Database } from "../db/index.ts";
import { apps, deployments } from "../db/schema.ts";
import { bearerAuth, errorResponses, projectIdParam } from "../openapi.ts";
import { optionalPage, optionalPageQuery, pageFields } from "../optional-page.ts";
import { NO_RUNS, unfinishedRunsByApp } from "../runs/unfinished.ts";
import { notDeployed } from "./app-lookup.ts";

export const appSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    runtime: z.enum(["managed", "custom"]),
    version: z.number().int(),
    digest: z.string().nullable().openapi({
      description:
        "What identifies the live version's files (SHA-256, hex); a runtime host checks the bundle it fetches against it. Null for a version deployed before digests were kept.",
    }),
    /** The live version's `[scaling]`: `capacity` is how many calls it runs at once. */
    scaling: z.object({
      minReplicas: z.number().int(),
      maxReplicas: z.number().int(),
      replicaConcurrency: z.number().int(),
      capacity: z.number().int(),
      cooldown: z.number().int().openapi({
        description: "Seconds a replica stays idle before it stops, down to minReplicas.",
      }),
    }),
    /** Seconds an async run may take (`response_grace_period`), and wait for a replica. */
    responseGracePeriod: z.number().int(),
    queueTimeout: z.number().int(),
    startTimeout: z.number().int().openapi({
      description:
        "Seconds a replica may take to be ready (`start_timeout`; 30 unless runlet.toml sets it). A sync call that finds no replica of the app ready waits for the start, then up to 30 s for a slot.",
    }),
    functions: z.array(z.string()).nullable().openapi({
      description:
        "A managed app's functions, as its live version's start check found them; null when not known (a custom app, a deploy with startCheck=false, or one before 2026-11-27). The run API answers 404 at once for an async call of another.",
    }),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi("App");

export type AppView = z.infer<typeof appSchema>;

/** An app's async queue now (runs/unfinished.ts): on the list of apps and on its replicas. */
export const unfinishedRunsSchema = z
  .object({
    queued: z.number().int(),
    running: z.number().int(),
  })
  .openapi("AppRuns", {
    description:
      "The app's async runs accepted and not started (queued), and started and not ended (running), counted over the runs index: each change is counted within about 200 ms.",
  });

const listedAppSchema = appSchema.extend({ runs: unfinishedRunsSchema }).openapi("ListedApp");

export type ListedApp = z.infer<typeof listedAppSchema>;

function view(
  row: typeof apps.$inferSelect,
  config: AppConfig,
  digest: string | null,
  functions: string[] | null,
): AppView {
  const { scaling } = config;
  return {
    id: row.id,
    name: row.name,
    runtime: row.runtime,
    version: row.currentVersion,
    digest,
    scaling: {
      minReplicas: scaling.min_replicas,
      maxReplicas: scaling.max_replicas,
      replicaConcurrency: scaling.replica_concurrency,
      capacity: scaling.max_replicas * scaling.replica_concurrency,
      cooldown: scaling.cooldown,
    },
    responseGracePeriod: config.response_grace_period,
    // Deployed before queue_timeout existed: the default it has now.
    queueTimeout: config.queue_timeout ?? DEFAULT_QUEUE_TIMEOUT_S,
    // Unset (or deployed before start_timeout existed): the runtime host's own limit.
    startTimeout: config.start_timeout ?? DEFAULT_START_TIMEOUT_S,
    functions,
    createdAt: new Date(row.createdAt).toISOString(),
    updatedAt: new Date(row.updatedAt).toISOString(),
  };
}

/** The apps with the config of their live version, by name; at most `limit` (-1: all). */
function withConfig(db: Database, where: SQL, limit = -1) {
  return db
    .select({
      app: apps,
      config: deployments.config,
      digest: deployments.digest,
      functions: deployments.exports,
    })
    .from(apps)
    .innerJoin(
      deployments,
      and(eq(deployments.appId, apps.id), eq(deployments.version, apps.currentVersion)),
    )
    .where(where)
    .orderBy(asc(apps.name))
    .limit(limit);
}

export const listAppsRoute = createRoute({
  method: "get",
  path: "/v2/projects/{projectId}/apps",
  operationId: "listApps",
  summary:
    "The project's apps, their live versions and their async runs queued and running (members and owners).",
  security: bearerAuth,
  middleware: [access({ role: "member" })] as const,
  request: { params: projectIdParam, query: optionalPageQuery("apps") },
  responses: {
    200: {
      description:
        "The apps by name: every one without `limit` and `nextToken` (hasMore false), else a page.",
      content: {
        "application/json": {
          schema: z.object({ apps: z.array(listedAppSchema), ...pageFields }),
        },
      },
    },
    ...errorResponses(),
  },
});

export const getAppRoute = createRoute({
  method: "get",
  path: "/v2/projects/{projectId}/apps/{appName}",
  operationId: "getApp",
  summary: "One app (members and owners).",
  security: bearerAuth,
  // A caller's token too: the run API reads the app with it before each call.
  middleware: [access({ role: "caller" })] as const,
  request: { params: projectIdParam.extend({ appName: z.string() }) },
  responses: {
    200: { description: "The app.", content: { "application/json": { schema: appSchema } } },
    ...errorResponses({ 404: "The project or the app does not exist." }),
  },
});

export function registerReadApps(app: OpenAPIHono<AppEnv>) {
  app.openapi(listAppsRoute, async (c) => {
    const { projectId } = c.var.access;
    const { rows, ...paging } = await optionalPage({
      key: c.var.deps.derived.pageTokens,
      query: c.req.valid("query"),
      filters: { list: "apps", projectId },
      fetch: (after, limit) =>
        withConfig(
          c.var.deps.db,
          and(
            eq(apps.projectId, projectId),
            after ? gt(apps.name, String(after.id)) : undefined,
          ) as SQL,
          limit,
        ),
      position: (r) => ({ timestamp: r.app.createdAt, id: r.app.name }),
    });
    const queues = await unfinishedRunsByApp(c.var.deps.db, projectId);
    const listed = rows.map((r) => ({
      ...view(r.app, r.config as AppConfig, r.digest, r.functions),
      runs: queues.get(r.app.name) ?? NO_RUNS,
    }));
    return c.json({ apps: listed, ...paging }, 200);
  });

  app.openapi(getAppRoute, async (c) => {
    const { projectId } = c.var.access;
    const { appName } = c.req.valid("param");
    const [row] = await withConfig(
      c.var.deps.db,
      and(eq(apps.projectId, projectId), eq(apps.name, appName)) as SQL,
    );
    if (!row) throw await notDeployed(c.var.deps.db, projectId, appName, c.var.access.role);
    return c.json(view(row.app, row.config as AppConfig, row.digest, row.functions), 200);
  });
}
