import { and, asc, eq } from "drizzle-orm";
import type { Hono } from "hono";
import { type AppEnv, projectAccess } from "../context.ts";
import { apps } from "../db/schema.ts";
import { ApiError } from "../errors.ts";

export interface AppView {
  id: string;
  name: string;
  runtime: "managed" | "custom";
  version: number;
  createdAt: string;
  updatedAt: string;
}

function view(row: typeof apps.$inferSelect): AppView {
  return {
    id: row.id,
    name: row.name,
    runtime: row.runtime,
    version: row.currentVersion,
    createdAt: new Date(row.createdAt).toISOString(),
    updatedAt: new Date(row.updatedAt).toISOString(),
  };
}

/** `GET /v2/projects/{id}/apps` and `GET /v2/projects/{id}/apps/{name}` (members and owners). */
export function registerReadApps(app: Hono<AppEnv>) {
  app.get("/v2/projects/:projectId/apps", async (c) => {
    const { projectId } = await projectAccess(c);
    const rows = await c.var.deps.db
      .select()
      .from(apps)
      .where(eq(apps.projectId, projectId))
      .orderBy(asc(apps.name));
    return c.json({ apps: rows.map(view) });
  });

  app.get("/v2/projects/:projectId/apps/:appName", async (c) => {
    const { projectId } = await projectAccess(c);
    const name = c.req.param("appName");
    const [row] = await c.var.deps.db
      .select()
      .from(apps)
      .where(and(eq(apps.projectId, projectId), eq(apps.name, name)));
    if (!row)
      throw new ApiError("not_found", `app '${name}' is not deployed in project '${projectId}'`);
    return c.json(view(row));
  });
}
