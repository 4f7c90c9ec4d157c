import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import { and, eq } from "drizzle-orm";
import { bodyLimit } from "hono/body-limit";
import { parse as parseToml } from "smol-toml";
import {
  type AppConfig,
  appConfigSchema,
  bundleFileSchema,
  describeConfigError,
  describeTomlError,
  pathClash,
} from "../../common/app-config.ts";
import { digestOfBundle } from "../../common/bundle-digest.ts";
import { newId } from "../../common/ids.ts";
import { auditSuccess } from "../audit/record.ts";
import { access } from "../auth/access.ts";
import { KEPT_BUNDLES } from "../bundles.ts";
import type { AppEnv } from "../context.ts";
import { apps, deployments } from "../db/schema.ts";
import { ApiError } from "../errors.ts";
import { recordedDigest } from "../hosts/registry.ts";
import { KeyedQueue } from "../keyed-queue.ts";
import { bearerAuth, errorResponses, projectIdParam } from "../openapi.ts";
import { registerDeleteApp } from "./apps-delete.ts";
import { startedSchema, startFirst } from "./apps-deploy-start.ts";

/** Largest app bundle, counted after base64 decoding. */
export const MAX_BUNDLE_BYTES = 20 * 1024 * 1024;

export const deployRequest = z
  .strictObject({
    files: z.array(bundleFileSchema).min(1).max(5000),
  })
  .openapi("AppBundle");

export const deployedAppSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    runtime: z.enum(["managed", "custom"]),
    version: z.number().int(),
    files: z.number().int(),
    bytes: z.number().int(),
    deployedAt: z.string(),
    started: startedSchema,
  })
  .openapi("DeployedApp");

export type DeployedApp = z.infer<typeof deployedAppSchema>;

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

/**
 * The bundle's `runlet.toml`, or 400 saying what is wrong with it; `named` hears the app's name
 * as soon as it can be read, so a refused deploy is audited under the app it was for.
 */
function readConfig(
  files: z.infer<typeof deployRequest>["files"],
  named: (name: string) => void,
): AppConfig {
  const manifest = files.find((f) => f.path === "runlet.toml");
  if (!manifest) throw new ApiError("bad_request", "the bundle has no runlet.toml at its root");
  let raw: unknown;
  try {
    raw = parseToml(Buffer.from(manifest.contentBase64, "base64").toString("utf8"));
  } catch (err) {
    throw new ApiError("bad_request", `runlet.toml is not valid TOML: ${describeTomlError(err)}`);
  }
  const name = (raw as { name?: unknown } | null)?.name;
  if (appConfigSchema.shape.name.safeParse(name).success) named(name as string);
  const parsed = appConfigSchema.safeParse(raw);
  if (!parsed.success)
    throw new ApiError("bad_request", `runlet.toml: ${describeConfigError(parsed.error)}`);
  const config = parsed.data;
  if (
    config.runtime === "managed" &&
    !files.some((f) => f.path === "main.js" || f.path === "main.mjs")
  ) {
    throw new ApiError(
      "bad_request",
      "a managed-runtime app needs main.js or main.mjs at its root",
    );
  }
  return config;
}

export function registerDeployApp(app: OpenAPIHono<AppEnv>) {
  // Deploys of one app run one after another: each takes the next version number, and the host
  // never holds the files of a deploy that lost a race for that number. (One control-plane
  // process per database; the UNIQUE index below still guards against a second one.)
  const deploysByApp = new KeyedQueue();
  app.openapi(deployAppRoute, async (c) => {
    const { principal, projectId } = c.var.access;
    const { files } = c.req.valid("json");
    const { startCheck } = c.req.valid("query");
    const clash = pathClash(files.map((f) => f.path));
    if (clash) throw new ApiError("bad_request", clash);
    let bytes = 0;
    for (const f of files) bytes += Buffer.byteLength(f.contentBase64, "base64");
    if (bytes > MAX_BUNDLE_BYTES) throw new ApiError("payload_too_large", tooLarge);
    const audit = c.var.audit;
    const config = readConfig(files, (name) => {
      if (audit) audit.target = { type: "app", id: name };
    });
    const { db, bundles } = c.var.deps;
    const digest = await digestOfBundle(files);
    const body = await deploysByApp.run(`${projectId}/${config.name}`, async () => {
      const [existing] = await db
        .select()
        .from(apps)
        .where(and(eq(apps.projectId, projectId), eq(apps.name, config.name)));
      const version = (existing?.currentVersion ?? 0) + 1;
      const appId = existing?.id ?? newId("app");

      // The bundle is kept first: a row never names a version the hosts cannot fetch. Under its
      // digest too: a deploy of another isolate or process that takes the same number at once
      // writes beside it, not over it (the database records one of them).
      const key = { project: projectId, app: config.name, version, digest };
      const bundle = { version, config, files };
      await bundles.put(key, bundle);
      /** Not recorded: its bundle goes, unless the version recorded has the same files. */
      const forget = async () => {
        const recorded = await recordedDigest(db, projectId, config.name, version).catch(
          () => null,
        );
        if (recorded !== digest) await bundles.forget(key).catch(() => {});
      };

      // A replica of it starts on a host before anything names it: a version that cannot start
      // is refused, and the one before goes on answering (apps-deploy-start.ts).
      const started =
        startCheck === "false"
          ? null
          : await startFirst(
              c,
              { project: projectId, app: config.name, version, digest, bundle },
              existing?.currentVersion,
            ).catch(async (err: unknown) => {
              await forget();
              throw err;
            });

      const now = Date.now();
      const upsertApp = existing
        ? db
            .update(apps)
            .set({ runtime: config.runtime, currentVersion: version, updatedAt: now })
            .where(and(eq(apps.id, appId), eq(apps.currentVersion, existing.currentVersion)))
        : db.insert(apps).values({
            id: appId,
            projectId,
            name: config.name,
            runtime: config.runtime,
            currentVersion: version,
            createdAt: now,
            updatedAt: now,
          });
      const recordDeployment = db.insert(deployments).values({
        id: newId("dep"),
        appId,
        version,
        config,
        files: files.length,
        bytes,
        digest,
        deployedBy: principal.id,
        createdAt: now,
      });
      try {
        await db.batch([
          upsertApp,
          recordDeployment,
          auditSuccess(c, { version, runtime: config.runtime, files: files.length, bytes }),
        ]);
        // The bundles older than the newest KEPT_BUNDLES: no host fetches them any more. All
        // of them, whatever digest names them, without asking the database which one it
        // recorded (a failed read left that one behind for good), and what an earlier deploy
        // failed to forget or left behind unrecorded goes too.
        if (version > KEPT_BUNDLES) {
          await bundles
            .forgetUpTo(projectId, config.name, version - KEPT_BUNDLES)
            .catch((err) => console.error(`bundles not forgotten: ${err}`));
        }
      } catch (err) {
        await forget();
        if (/UNIQUE constraint failed/i.test(String((err as Error).message))) {
          throw new ApiError(
            "conflict",
            `another deploy of '${config.name}' happened at the same time; retry`,
          );
        }
        throw err;
      }

      // Hosts running the app switch to it now (one starts its min_replicas), others at their
      // next call of it; a host that does not answer learns it at a heartbeat.
      await c.var.deps.hosts.announce({
        project: projectId,
        app: config.name,
        appId,
        version,
        digest,
        warm: config.scaling.min_replicas > 0,
        startedOn: started?.host,
      });

      const deployed: DeployedApp = {
        id: appId,
        name: config.name,
        runtime: config.runtime,
        version,
        files: files.length,
        bytes,
        deployedAt: new Date(now).toISOString(),
        started,
      };
      return deployed;
    });
    return c.json(body, 201);
  });

  registerDeleteApp(app, deploysByApp);
}
