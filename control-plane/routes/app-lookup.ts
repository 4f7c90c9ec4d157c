/** The app a route names, or the 404 every app route answers for one not deployed. */
import { and, eq } from "drizzle-orm";
import type { Database } from "../db/index.ts";
import { apps } from "../db/schema.ts";
import { ApiError } from "../errors.ts";

export async function appOr404(
  db: Database,
  projectId: string,
  appName: string,
): Promise<{ id: string; runtime: string; createdAt: number; currentVersion: number }> {
  const [found] = await db
    .select({
      id: apps.id,
      runtime: apps.runtime,
      createdAt: apps.createdAt,
      currentVersion: apps.currentVersion,
    })
    .from(apps)
    .where(and(eq(apps.projectId, projectId), eq(apps.name, appName)));
  if (!found)
    throw new ApiError("not_found", `app '${appName}' is not deployed in project '${projectId}'`);
  return found;
}
