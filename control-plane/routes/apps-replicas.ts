/**
 * `GET /v2/projects/{projectId}/apps/{appName}/replicas`: the app's replicas now (starting,
 * idle, busy) and the calls waiting for one, as the runtime host sees them; and its async queue,
 * `runs: {queued, running}`, from the run store (over the runs index: runs/unfinished.ts). The
 * host's `queued` is its calls waiting for a slot (sync calls, and the few async runs each shard
 * has handed over); `runs.queued` is every accepted async run not started, however many. A host
 * that cannot be reached is said so (`host: "unreachable"`), not an error: a page must still
 * show the app. Not on `GET …/apps/{appName}`: the Worker reads that one on its hot path.
 */
import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import { REGISTRY_STATES } from "../../common/protocol/hosts.ts";
import { access } from "../auth/access.ts";
import type { AppEnv } from "../context.ts";
import { listHosts } from "../hosts/registry.ts";
import { bearerAuth, errorResponses, projectIdParam } from "../openapi.ts";
import { unfinishedRunsOf } from "../runs/unfinished.ts";
import { appOr404 } from "./app-lookup.ts";
import { unfinishedRunsSchema } from "./apps-read.ts";

const replicasSchema = z
  .object({
    replicas: z.object({
      starting: z.number().int(),
      idle: z.number().int(),
      busy: z.number().int(),
    }),
    queued: z.number().int().openapi({
      description:
        "Calls waiting at the runtime hosts for a replica slot: sync calls, and the async runs handed over to them (a few per shard). Not the async queue: see runs.",
    }),
    runs: unfinishedRunsSchema,
    host: z.enum(["reachable", "unreachable"]),
    hostsTakingWork: z.number().int().openapi({
      description:
        "Runtime hosts of this Runlet taking new work now (up: not draining, drained, stopped or down). With none, queued runs wait for one.",
    }),
    hosts: z
      .array(
        z.object({
          id: z.string(),
          name: z.string(),
          state: z.enum([...REGISTRY_STATES, "down"]),
          replicas: z.number().int(),
          busy: z.number().int(),
        }),
      )
      .openapi({
        description:
          "The hosts that run its replicas: as each said when asked now, or as its last heartbeat said if it did not answer (docs/hosts.md).",
      }),
  })
  .openapi("AppReplicas");

export type AppReplicas = z.infer<typeof replicasSchema>;

export const getAppReplicasRoute = createRoute({
  method: "get",
  path: "/v2/projects/{projectId}/apps/{appName}/replicas",
  operationId: "getAppReplicas",
  summary:
    "The app's replicas now and its waiting calls, from the runtime host, and its async runs queued and running (members and owners).",
  security: bearerAuth,
  middleware: [access({ role: "member" })] as const,
  request: { params: projectIdParam.extend({ appName: z.string().max(64) }) },
  responses: {
    200: {
      description: "The replicas (zeros and host: unreachable when the host does not answer).",
      content: { "application/json": { schema: replicasSchema } },
    },
    ...errorResponses({ 404: "The project or the app does not exist." }),
  },
});

export function registerGetAppReplicas(app: OpenAPIHono<AppEnv>) {
  app.openapi(getAppReplicasRoute, async (c) => {
    const { db, hosts } = c.var.deps;
    const { projectId } = c.var.access;
    const { appName } = c.req.valid("param");
    const found = await appOr404(db, projectId, appName, c.var.access.role);
    const [counts, runs] = await Promise.all([
      hosts.replicas({ project: projectId, app: appName }),
      unfinishedRunsOf(db, projectId, { name: appName, createdAt: found.createdAt }),
    ]);
    // A host that answered now says its part; the others, as their last heartbeats did (one
    // 2 s old could say a replica was idle while the line above counted it busy).
    const all = await listHosts(db);
    const runningIt = all.flatMap((h) => {
      const mine =
        counts?.byHost.get(h.id) ??
        h.apps.find((a) => a.project === projectId && a.app === appName);
      return mine?.replicas
        ? [{ id: h.id, name: h.name, state: h.state, replicas: mine.replicas, busy: mine.busy }]
        : [];
    });
    const { starting = 0, idle = 0, busy = 0, queued = 0 } = counts ?? {};
    return c.json(
      {
        replicas: { starting, idle, busy },
        queued,
        runs,
        host: counts ? "reachable" : "unreachable",
        hostsTakingWork: all.filter((h) => h.state === "up").length,
        hosts: runningIt,
      } as const,
      200,
    );
  });
}
