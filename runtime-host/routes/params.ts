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
