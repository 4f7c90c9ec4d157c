/** The app a route names, or the 404 every app route answers for one not deployed. */
import { and, eq } from "drizzle-orm";
import { didYouMean } from "../../common/closest.ts";
import { roleMeets } from "../auth/access.ts";
import type { Role } from "../auth/tokens.ts";
import type { Database } from "../db/index.ts";
import { apps } from "../db/schema.ts";
import { ApiError } from "../errors.ts";

/**
 * The 404 for an app name the project has no app of, with the app it likely meant (`did you mean
 * 'hello'?`) for a role that may list the apps (a caller may not: it learns no other name). A
 * typo, in `runlet run helo` above all, said only that `helo` was not deployed.
 */
export async function notDeployed(
  db: Database,
  projectId: string,
  appName: string,
  role: Role | null,
): Promise<ApiError> {
  // What the app routes ask to list the apps (GET …/apps): a member at least.
  const mayList = role !== null && roleMeets(role, "member");
  const names = mayList
    ? (await db.select({ name: apps.name }).from(apps).where(eq(apps.projectId, projectId))).map(
        (row) => row.name,
      )
    : [];
  return new ApiError(
    "not_found",
    `app '${appName}' is not deployed in project '${projectId}'${didYouMean(appName, names)}`,
  );
}

export async function appOr404(
  db: Database,
  projectId: string,
  appName: string,
  /** The caller's role, for the 404's suggestion (notDeployed). */
  role: Role | null = null,
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
  if (!found) throw await notDeployed(db, projectId, appName, role);
  return found;
}
