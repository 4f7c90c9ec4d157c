import { ENV } from "../common/consts.ts";
import { CliError } from "./command.ts";

/**
 * The 404 of the project the CLI works in, once it was deleted (`runlet projects delete`): the
 * server's words name the API's routes; these say where the CLI took the id from and what to do.
 */
export function deletedProject(
  config: { projectId: string; projectFrom?: string },
  path: string,
  what: string,
  err: unknown,
): CliError | undefined {
  const id = config.projectId;
  if (!(err instanceof CliError) || err.answer?.status !== 404 || !id) return undefined;
  if (!path.startsWith(`/v2/projects/${id}`)) return undefined;
  if (!err.said?.startsWith(`project '${id}' was deleted`)) return undefined;
  const from = config.projectFrom ?? ENV.project;
  const fix =
    from === ENV.project || !from.startsWith("projectId of ")
      ? `set ${ENV.project} to another's id`
      : `set ${ENV.project} to another's id, or write it as the projectId of ${from.slice("projectId of ".length)}`;
  const said = `project ${id} was deleted: the CLI works in it (${from}). To work in another, ${fix} (npx runlet projects lists yours; npx runlet projects create --name NAME makes one)`;
  return new CliError(`${what} failed (404): ${said}`, err.answer, said);
}
