/**
 * What a deploy does once it holds a bundle (its files and its `runlet.toml`): keep the bundle,
 * start a replica of it first (apps-deploy-start.ts), record it as the app's next version with
 * its audit entry, announce it to the hosts. Both ways of deploying go through it: a bundle
 * uploaded (`POST …/apps`, apps-deploy.ts) and an earlier version's kept bundle deployed again
 * (`POST …/apps/{name}/versions/{version}/redeploy`, apps-redeploy.ts). Called inside the app's
 * queue of deploys (`KeyedQueue`), which both routes share.
 */
import { z } from "@hono/zod-openapi";
import { and, eq } from "drizzle-orm";
import { parse as parseToml } from "smol-toml";
import {
  type AppConfig,
  appConfigSchema,
  type BundleFile,
  describeConfigError,
  describeTomlError,
  missingEntry,
} from "../../common/app-config.ts";
import { newId } from "../../common/ids.ts";
import { auditSuccess } from "../audit/record.ts";
import { KEPT_BUNDLES } from "../bundles.ts";
import type { Ctx } from "../context.ts";
import { apps, deployments } from "../db/schema.ts";
import { ApiError } from "../errors.ts";
import { recordedDigest } from "../hosts/registry.ts";
import { startedSchema, startFirst } from "./apps-deploy-start.ts";

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

/**
 * The bundle's `runlet.toml`, or 400 saying what is wrong with it; `named` hears the app's name
 * as soon as it can be read, so a refused deploy is audited under the app it was for.
 */
export function readConfig(
  files: readonly BundleFile[],
  named: (name: string) => void = () => {},
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
  const missing = missingEntry(
    config.runtime,
    files.map((f) => f.path),
  );
  if (missing) throw new ApiError("bad_request", missing);
  return config;
}

/** The files' size, decoded from base64. */
export function bundleBytes(files: readonly BundleFile[]): number {
  let bytes = 0;
  for (const f of files) bytes += Buffer.byteLength(f.contentBase64, "base64");
  return bytes;
}

/** A bundle ready to deploy: read, checked, measured and digested. */
export interface BundleToDeploy {
  config: AppConfig;
  files: BundleFile[];
  /** The files' size, decoded. */
  bytes: number;
  digest: string;
  /** false: `?startCheck=false`, recorded without starting a replica first. */
  startCheck: boolean;
  /** Beside the deploy's own details in its audit entry: `{rolledBackFrom: 3}`. */
  details?: Record<string, unknown>;
  /** The CLI's command that deploys it without the start check (a 503 names it). */
  uncheckedBy?: string;
}

/** Deploys `input` as the app's next version (in the app's queue of deploys): what was deployed. */
export async function deployVersion(c: Ctx, input: BundleToDeploy): Promise<DeployedApp> {
  const { config, files, bytes, digest } = input;
  const { principal, projectId } = c.var.access;
  const { db, bundles } = c.var.deps;
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
    const recorded = await recordedDigest(db, projectId, config.name, version).catch(() => null);
    if (recorded !== digest) await bundles.forget(key).catch(() => {});
  };

  // A replica of it starts on a host before anything names it: a version that cannot start
  // is refused, and the one before goes on answering (apps-deploy-start.ts).
  const started = !input.startCheck
    ? null
    : await startFirst(
        c,
        { project: projectId, app: config.name, version, digest, bundle },
        existing?.currentVersion,
        input.uncheckedBy,
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
    exports: started?.exports ?? null,
    rolledBackFrom:
      typeof input.details?.rolledBackFrom === "number" ? input.details.rolledBackFrom : null,
    deployedBy: principal.id,
    createdAt: now,
  });
  try {
    await db.batch([
      upsertApp,
      recordDeployment,
      auditSuccess(c, {
        version,
        runtime: config.runtime,
        files: files.length,
        bytes,
        ...input.details,
      }),
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

  return {
    id: appId,
    name: config.name,
    runtime: config.runtime,
    version,
    files: files.length,
    bytes,
    deployedAt: new Date(now).toISOString(),
    started,
  };
}
