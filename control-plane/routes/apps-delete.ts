/**
 * `DELETE /v2/projects/{projectId}/apps/{appName}`: the app's rows and its audit entry first, then
 * its replicas on every live host, then its bundles (docs/api.md). In the deploys' queue of the
 * app (apps-deploy.ts): a deploy and a delete of one app never interleave.
 */
import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import { and, eq } from "drizzle-orm";
import { auditSuccess } from "../audit/record.ts";
import { access } from "../auth/access.ts";
import type { Role } from "../auth/tokens.ts";
import type { AppEnv } from "../context.ts";
import { apps, deployments } from "../db/schema.ts";
import type { KeyedQueue } from "../keyed-queue.ts";
import { bearerAuth, errorResponses, projectIdParam } from "../openapi.ts";
import { notDeployed } from "./app-lookup.ts";

/** Who may delete an app: members and owners (the dashboard offers the button to them alone). */
export const DELETE_APP_ROLE = "member" satisfies Role;

export const deleteAppRoute = createRoute({
  method: "delete",
  path: "/v2/projects/{projectId}/apps/{appName}",
  operationId: "deleteApp",
  summary:
    "Delete an app: its replicas stop, its files and deployments go (members and owners; audited).",
  security: bearerAuth,
  middleware: [
    access({
      role: DELETE_APP_ROLE,
      audit: {
        action: "apps.delete",
        target: (c) => ({ type: "app", id: c.req.param("appName") ?? "" }),
      },
    }),
  ] as const,
  request: { params: projectIdParam.extend({ appName: z.string().max(64) }) },
  responses: {
    204: { description: "Deleted; calls of the app are 404 from now on." },
    ...errorResponses({ 404: "The project or the app does not exist." }),
  },
});

/** `deploysByApp`: the queue the app's deploys run in, which its deletes join. */
export function registerDeleteApp(app: OpenAPIHono<AppEnv>, deploysByApp: KeyedQueue) {
  app.openapi(deleteAppRoute, async (c) => {
    const { projectId } = c.var.access;
    const { appName } = c.req.valid("param");
    const { db, hosts, bundles } = c.var.deps;
    await deploysByApp.run(`${projectId}/${appName}`, async () => {
      const [existing] = await db
        .select()
        .from(apps)
        .where(and(eq(apps.projectId, projectId), eq(apps.name, appName)));
      if (!existing) throw await notDeployed(db, projectId, appName, c.var.access.role);
      // The rows first: a host that misses the stop below hears at its next heartbeat that
      // the app is gone. Then the bundles (a host can no longer fetch a version of it).
      await db.batch([
        db.delete(deployments).where(eq(deployments.appId, existing.id)),
        db.delete(apps).where(eq(apps.id, existing.id)),
        auditSuccess(c, { version: existing.currentVersion }),
      ]);
      await hosts.remove({ project: projectId, app: appName, appId: existing.id });
      await bundles.remove(projectId, appName);
    });
    return c.body(null, 204);
  });
}
