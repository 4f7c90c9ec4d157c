import type { AppConfig } from "../../common/app-config.ts";
import type { AppRegistry, Deployment } from "../apps.ts";
import { HttpError } from "../http/errors.ts";
import { NAME_PATTERN } from "../names.ts";

/** The project and app of a route's path; 400 unless both are valid names. */
export function projectAndApp(params: readonly string[]): { project: string; app: string } {
  const [project = "", app = ""] = params;
  for (const [label, value] of [
    ["project", project],
    ["app", app],
  ] as const) {
    if (!NAME_PATTERN.test(value)) {
      throw new HttpError(
        400,
        `${label} must be 1-64 lowercase letters, digits, '-' or '_', starting with a letter or digit`,
      );
    }
  }
  return { project, app };
}

/**
 * The app's current deployment, which must use `runtime`: 404 if it is not deployed, 400 with
 * `otherwise` (what to do instead) if it uses the other runtime.
 */
export function deploymentOf(
  registry: AppRegistry,
  { project, app }: { project: string; app: string },
  runtime: AppConfig["runtime"],
  otherwise: string,
): Deployment {
  const deployment = registry.get(project, app);
  if (!deployment) throw new HttpError(404, `app '${app}' is not deployed in project '${project}'`);
  if (deployment.config.runtime !== runtime) throw new HttpError(400, otherwise);
  return deployment;
}
