import type { OpenAPIHono } from "@hono/zod-openapi";
import { asc } from "drizzle-orm";
import type { AppList } from "../../common/protocol/apps.ts";
import { internalOnly } from "../auth/internal-only.ts";
import type { AppEnv } from "../context.ts";
import { apps } from "../db/schema.ts";

/**
 * `GET /internal/apps`: every deployed app, `{apps: [{project, app}]}`. The Worker wakes the run
 * store of each after a restart (see worker/runs/wake.ts).
 */
export function registerInternalApps(app: OpenAPIHono<AppEnv>) {
  app.get("/internal/apps", internalOnly, async (c) => {
    const rows = await c.var.deps.db
      .select({ project: apps.projectId, app: apps.name })
      .from(apps)
      .orderBy(asc(apps.projectId), asc(apps.name));
    return c.json({ apps: rows } satisfies AppList, 200);
  });
}
