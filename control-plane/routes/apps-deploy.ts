import { and, eq } from "drizzle-orm";
import type { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { parse as parseToml } from "smol-toml";
import { z } from "zod";
import {
  type AppConfig,
  appConfigSchema,
  bundleFileSchema,
  describeZodError,
} from "../../common/app-config.ts";
import { newId } from "../../common/ids.ts";
import { type AppEnv, projectAccess } from "../context.ts";
import { apps, deployments } from "../db/schema.ts";
import { ApiError } from "../errors.ts";
import { KeyedQueue } from "../keyed-queue.ts";
import { jsonBody } from "../validate.ts";

/** Largest app bundle, counted after base64 decoding. */
export const MAX_BUNDLE_BYTES = 20 * 1024 * 1024;

export const deployRequest = z.strictObject({
  files: z.array(bundleFileSchema).min(1).max(5000),
});

export interface DeployedApp {
  id: string;
  name: string;
  runtime: AppConfig["runtime"];
  version: number;
  files: number;
  bytes: number;
  deployedAt: string;
}

function readConfig(files: z.infer<typeof deployRequest>["files"]): AppConfig {
  const manifest = files.find((f) => f.path === "runlet.toml");
  if (!manifest) throw new ApiError("bad_request", "the bundle has no runlet.toml at its root");
  let raw: unknown;
  try {
    raw = parseToml(Buffer.from(manifest.contentBase64, "base64").toString("utf8"));
  } catch (err) {
    const first = String((err as Error).message).split("\n")[0];
    throw new ApiError("bad_request", `runlet.toml is not valid TOML: ${first}`);
  }
  const parsed = appConfigSchema.safeParse(raw);
  if (!parsed.success)
    throw new ApiError("bad_request", `runlet.toml: ${describeZodError(parsed.error)}`);
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

export function registerDeployApp(app: Hono<AppEnv>) {
  // Deploys of one app run one after another: each takes the next version number, and the host
  // never holds the files of a deploy that lost a race for that number. (One control-plane
  // process per database; the UNIQUE index below still guards against a second one.)
  const deploysByApp = new KeyedQueue();
  app.post(
    "/v2/projects/:projectId/apps",
    bodyLimit({
      maxSize: Math.ceil(MAX_BUNDLE_BYTES * 1.4),
      onError: () => {
        throw new ApiError(
          "payload_too_large",
          `the bundle is larger than ${MAX_BUNDLE_BYTES / 1024 / 1024} MiB`,
        );
      },
    }),
    async (c) => {
      const { principal, projectId } = await projectAccess(c);
      const { files } = await jsonBody(c, deployRequest);
      const paths = new Set<string>();
      let bytes = 0;
      for (const f of files) {
        if (paths.has(f.path))
          throw new ApiError("bad_request", `files: '${f.path}' appears twice`);
        paths.add(f.path);
        bytes += Buffer.byteLength(f.contentBase64, "base64");
      }
      if (bytes > MAX_BUNDLE_BYTES) {
        throw new ApiError(
          "payload_too_large",
          `the bundle is larger than ${MAX_BUNDLE_BYTES / 1024 / 1024} MiB`,
        );
      }
      const config = readConfig(files);
      const { db, host } = c.var.deps;
      const body = await deploysByApp.run(`${projectId}/${config.name}`, async () => {
        const [existing] = await db
          .select()
          .from(apps)
          .where(and(eq(apps.projectId, projectId), eq(apps.name, config.name)));
        const version = (existing?.currentVersion ?? 0) + 1;
        const appId = existing?.id ?? newId("app");
        const now = Date.now();

        // The host gets the code first: a row never points at a version that cannot run.
        await host.deploy({ project: projectId, app: config.name, version, config, files });

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
          deployedBy: principal.id,
          createdAt: now,
        });
        try {
          await db.batch([upsertApp, recordDeployment]);
        } catch (err) {
          if (/UNIQUE constraint failed/i.test(String((err as Error).message))) {
            throw new ApiError(
              "conflict",
              `another deploy of '${config.name}' happened at the same time; retry`,
            );
          }
          throw err;
        }

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
    },
  );
}
