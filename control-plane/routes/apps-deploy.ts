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
    body: { required: true, content: { "application/json": { schema: deployRequest } } },
  },
  responses: {
    201: {
      description: "Deployed; new calls get this version.",
      content: { "application/json": { schema: deployedAppSchema } },
    },
    ...errorResponses({
      409: "Another control plane deployed the same version at the same time; retry.",
      413: "The bundle is larger than 20 MiB.",
      502: "The runtime host could not take the bundle.",
    }),
  },
});

export const deleteAppRoute = createRoute({
  method: "delete",
  path: "/v2/projects/{projectId}/apps/{appName}",
  operationId: "deleteApp",
  summary:
    "Delete an app: its replicas stop, its files and deployments go (members and owners; audited).",
  security: bearerAuth,
  middleware: [
    access({
      role: "member",
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
      const now = Date.now();

      // The bundle is kept first: a row never names a version the hosts cannot fetch. Under its
      // digest too: a deploy of another isolate or process that takes the same number at once
      // writes beside it, not over it (the database records one of them).
      const key = { project: projectId, app: config.name, version, digest };
      await bundles.put(key, { version, config, files });

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
        // Not recorded: its bundle goes, unless the version recorded has the same files.
        const recorded = await recordedDigest(db, projectId, config.name, version).catch(
          () => null,
        );
        if (recorded !== digest) await bundles.forget(key).catch(() => {});
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
      });

      const deployed: DeployedApp = {
        id: appId,
        name: config.name,
        runtime: config.runtime,
        version,
        files: files.length,
        bytes,
        deployedAt: new Date(now).toISOString(),
      };
      return deployed;
    });
    return c.json(body, 201);
  });

  app.openapi(deleteAppRoute, async (c) => {
    const { projectId } = c.var.access;
    const { appName } = c.req.valid("param");
    const { db, hosts, bundles } = c.var.deps;
    await deploysByApp.run(`${projectId}/${appName}`, async () => {
      const [existing] = await db
        .select()
        .from(apps)
        .where(and(eq(apps.projectId, projectId), eq(apps.name, appName)));
      if (!existing) {
        throw new ApiError(
          "not_found",
          `app '${appName}' is not deployed in project '${projectId}'`,
        );
      }
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
