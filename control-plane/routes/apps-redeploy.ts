/**
 * `POST /v2/projects/{projectId}/apps/{appName}/versions/{version}/redeploy`: an earlier
 * version's kept bundle (its files and its `runlet.toml`, as they were) deployed again as the
 * app's next version: a rollback in one step (`runlet apps rollback`, the dashboard's "Roll back
 * to this version"). It goes the way an uploaded bundle does (apps-deploy-version.ts): a replica
 * of it starts first, it is recorded and audited as `apps.deploy` (with `rolledBackFrom`), and
 * announced to the hosts; in the app's queue of deploys. Named for what it does: history is
 * never rewound, the version number only grows, and the live version is the newest.
 */
import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import { and, eq } from "drizzle-orm";
import { digestOfBundle } from "../../common/bundle-digest.ts";
import type { DeployRequest } from "../../common/protocol/deploy.ts";
import { access } from "../auth/access.ts";
import { isKept, KEPT_BUNDLES, keptBundle } from "../bundles.ts";
import type { AppEnv } from "../context.ts";
import { deployments } from "../db/schema.ts";
import { ApiError } from "../errors.ts";
import type { KeyedQueue } from "../keyed-queue.ts";
import { bearerAuth, errorResponses, projectIdParam } from "../openapi.ts";
import { appOr404 } from "./app-lookup.ts";
import {
  bundleBytes,
  deployedAppSchema,
  deployVersion,
  readConfig,
} from "./apps-deploy-version.ts";

export const redeployVersionRoute = createRoute({
  method: "post",
  path: "/v2/projects/{projectId}/apps/{appName}/versions/{version}/redeploy",
  operationId: "redeployAppVersion",
  summary:
    "Deploy an earlier version's files again as the app's next version: a rollback (members and owners; audited as apps.deploy).",
  security: bearerAuth,
  middleware: [
    access({
      role: "member",
      audit: {
        action: "apps.deploy",
        target: (c) => ({ type: "app", id: c.req.param("appName") ?? "" }),
      },
    }),
  ] as const,
  request: {
    params: projectIdParam.extend({
      appName: z.string().max(64),
      version: z
        .string()
        .regex(/^[1-9][0-9]{0,8}$/, "must be a version number: 1, 2, …")
        .openapi({ description: "The version whose files are deployed again." }),
    }),
    query: z.strictObject({
      startCheck: z.enum(["true", "false"]).optional().openapi({
        description:
          "false: record the new version without starting a replica of it first, as for a deploy. Default true.",
      }),
    }),
    // No fields: a body with any (a typo, a field of another API) is a 400 naming it, not ignored.
    body: { required: false, content: { "application/json": { schema: z.strictObject({}) } } },
  },
  responses: {
    201: {
      description:
        "Deployed as the app's next version: a replica of it started first, and new calls get it.",
      content: { "application/json": { schema: deployedAppSchema } },
    },
    ...errorResponses({
      404: "The project, the app, or that version of it does not exist.",
      409: `The version is the live one already, or its files are no longer kept (only an app's ${KEPT_BUNDLES} newest versions keep them); or another control plane deployed at the same time.`,
      422: "A replica of it did not start, as for a deploy: nothing was recorded, and the live version still answers.",
      503: "No runtime host is up to start a replica of it first, or none could, as for a deploy: nothing was recorded.",
    }),
  },
});

/** `deploysByApp`: the queue the app's deploys run in (apps-deploy.ts). */
export function registerRedeployVersion(app: OpenAPIHono<AppEnv>, deploysByApp: KeyedQueue) {
  app.openapi(redeployVersionRoute, async (c) => {
    const { projectId } = c.var.access;
    const { appName } = c.req.valid("param");
    const from = Number(c.req.valid("param").version);
    const { startCheck } = c.req.valid("query");
    const { db, bundles } = c.var.deps;
    const body = await deploysByApp.run(`${projectId}/${appName}`, async () => {
      const found = await appOr404(db, projectId, appName, c.var.access.role);
      const live = found.currentVersion;
      const [row] = await db
        .select({ digest: deployments.digest })
        .from(deployments)
        .where(and(eq(deployments.appId, found.id), eq(deployments.version, from)));
      if (!row)
        throw new ApiError(
          "not_found",
          `app '${appName}' has no version ${from} (its versions are 1 to ${live})`,
        );
      if (from === live)
        throw new ApiError(
          "conflict",
          `version ${from} of '${appName}' is already live: nothing was deployed`,
        );
      const key = { project: projectId, app: appName, version: from };
      const text = isKept(from, live) ? await keptBundle(bundles, key, row.digest) : undefined;
      if (text === undefined)
        throw new ApiError(
          "conflict",
          `the files of version ${from} of '${appName}' are no longer kept: only an app's ${KEPT_BUNDLES} newest versions keep theirs (now ${Math.max(1, live - KEPT_BUNDLES + 1)} to ${live}). Deploy its folder as it was at that version instead (runlet deploy <folder>)`,
        );
      const { files } = JSON.parse(text) as DeployRequest;
      return deployVersion(c, {
        config: readConfig(files),
        files,
        bytes: bundleBytes(files),
        digest: await digestOfBundle(files),
        startCheck: startCheck !== "false",
        details: { rolledBackFrom: from },
        uncheckedBy: `runlet apps rollback ${appName} --to ${from} --no-start-check`,
      });
    });
    return c.json(body, 201);
  });
}
