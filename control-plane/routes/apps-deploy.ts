import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import { bodyLimit } from "hono/body-limit";
import { bundleFileSchema, pathClash } from "../../common/app-config.ts";
import { MAX_BUNDLE_BYTES, MAX_BUNDLE_FILES } from "../../common/app-limits.ts";
import { digestOfBundle } from "../../common/bundle-digest.ts";
import { access } from "../auth/access.ts";
import type { AppEnv } from "../context.ts";
import { ApiError } from "../errors.ts";
import { KeyedQueue } from "../keyed-queue.ts";
import { bearerAuth, errorResponses, projectIdParam } from "../openapi.ts";
import { registerDeleteApp } from "./apps-delete.ts";
import {
  bundleBytes,
  deployedAppSchema,
  deployVersion,
  readConfig,
} from "./apps-deploy-version.ts";
import { registerRedeployVersion } from "./apps-redeploy.ts";

export type { DeployedApp } from "./apps-deploy-version.ts";

/** Largest app bundle, counted after base64 decoding (common/app-limits.ts). */
export { MAX_BUNDLE_BYTES };

export const deployRequest = z
  .strictObject({
    files: z.array(bundleFileSchema).min(1).max(MAX_BUNDLE_FILES),
  })
  .openapi("AppBundle");

const tooLarge = `the bundle is larger than ${MAX_BUNDLE_BYTES / 1024 / 1024} MiB`;

export const deployAppRoute = createRoute({
  method: "post",
  path: "/v2/projects/{projectId}/apps",
  operationId: "deployApp",
  summary: "Deploy an app bundle as the app's next version (members and owners; audited).",
  security: bearerAuth,
  middleware: [
    access({
      role: "member",
      audit: { action: "apps.deploy", target: () => ({ type: "app", id: "(bundle)" }) },
    }),
    bodyLimit({
      maxSize: Math.ceil(MAX_BUNDLE_BYTES * 1.4),
      onError: () => {
        throw new ApiError("payload_too_large", tooLarge);
      },
    }),
  ] as const,
  request: {
    params: projectIdParam,
    query: z.strictObject({
      startCheck: z.enum(["true", "false"]).optional().openapi({
        description:
          "false: record the version without starting a replica of it first (it becomes current whether it can start or not). Default true.",
      }),
    }),
    body: { required: true, content: { "application/json": { schema: deployRequest } } },
  },
  responses: {
    201: {
      description: "Deployed: a replica of the version started first, and new calls get it.",
      content: { "application/json": { schema: deployedAppSchema } },
    },
    ...errorResponses({
      409: "Another control plane deployed the same version at the same time; retry.",
      413: "The bundle is larger than 20 MiB.",
      422: "A replica of the version did not start (the app's error and its last output are quoted): nothing was recorded, and the version before still answers.",
      503: "No runtime host is up to start a replica of the version first, or none could for a reason of its own (its sandbox, the project's secrets, its disk; each host's reason is named): nothing was recorded.",
    }),
  },
});

export function registerDeployApp(app: OpenAPIHono<AppEnv>) {
  // Deploys of one app run one after another (its redeploys of earlier versions and its deletes
  // too): each takes the next version number, and the host never holds the files of a deploy
  // that lost a race for that number. (One control-plane process per database; the UNIQUE
  // index still guards against a second one: apps-deploy-version.ts.)
  const deploysByApp = new KeyedQueue();
  app.openapi(deployAppRoute, async (c) => {
    const { projectId } = c.var.access;
    const { files } = c.req.valid("json");
    const { startCheck } = c.req.valid("query");
    const clash = pathClash(files.map((f) => f.path));
    if (clash) throw new ApiError("bad_request", clash);
    const bytes = bundleBytes(files);
    if (bytes > MAX_BUNDLE_BYTES) throw new ApiError("payload_too_large", tooLarge);
    const audit = c.var.audit;
    const config = readConfig(files, (name) => {
      if (audit) audit.target = { type: "app", id: name };
    });
    const digest = await digestOfBundle(files);
    const body = await deploysByApp.run(`${projectId}/${config.name}`, () =>
      deployVersion(c, { config, files, bytes, digest, startCheck: startCheck !== "false" }),
    );
    return c.json(body, 201);
  });

  registerDeleteApp(app, deploysByApp);
  registerRedeployVersion(app, deploysByApp);
}
