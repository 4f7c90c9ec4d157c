import type { z } from "@hono/zod-openapi";
import { ENV } from "../../common/consts.ts";
import type { projectOfCallerSchema } from "../../control-plane/routes/projects-list.ts";
import { CliError, type Command, takesOnly } from "../command.ts";
import { type CliConfig, callApi, loadConfig, printTable } from "../config.ts";
import { confirmOrStop, YES_OPTION } from "../confirm.ts";

const USAGE = `Usage: runlet projects [list] [--all] [--json]
       runlet projects create --name NAME [--plan hobby|pro|enterprise] [--json]
       runlet projects update [ID] [--name NAME] [--plan hobby|pro|enterprise] [--json]
       runlet projects delete ID [--yes] [--json]

  list     (also with no subcommand) the projects you are in: id, name, plan, your role, when
           it was made, oldest first; * marks the one the CLI works in. With a service
           account's token, its one project. --json: {projects: [...]}, each with current.
           --all (operators): every project of this Runlet, ROLE '-' where you are in none;
           'RUNLET_PROJECT=<id> runlet users add me --role owner' enters one (audited there)
  create   a new project, owned by the user whose token the CLI has (a service account cannot
           make one). Audited as projects.create in it
  update   renames a project or changes its plan (ID: the one the CLI works in by default);
           owners only. Audited as projects.update in it, with what changed
  delete   deletes a project with no apps left (owners only; refused while it has apps,
           naming them: delete each first, runlet apps delete NAME). Its service accounts are
           revoked, its secrets and members removed, and every command in it fails from then
           on; its audit log stays stored but can no longer be read (export it first: runlet
           audit-log --export ndjson). Audited as projects.delete. On a terminal it asks first,
           naming the project (default No): --yes (-y) answers yes. A script (stdin or stdout
           not a terminal) is not asked. --json prints {deleted: ID, name}

The other commands work in the project of RUNLET_PROJECT, else the one a service account's
token names, else local.json's: set RUNLET_PROJECT to another one's id to work there.`;

/** `role` null: a project an operator's `--all` lists, which they are not in. */
type Project = Omit<z.infer<typeof projectOfCallerSchema>, "role"> & { role: string | null };

/** One row of the list: * for the project the CLI works in. */
export function projectRow(p: Project, current: string): string[] {
  const role = p.role ?? "-";
  return [p.id === current ? "*" : "", p.id, p.name, p.plan, role, p.createdAt.slice(0, 10)];
}

async function list(config: CliConfig, json: boolean, all: boolean): Promise<number> {
  const { projects } = await callApi<{ projects: Project[] }>(
    config,
    "GET",
    all ? "/v2/projects?all=true" : "/v2/projects",
    all ? "listing every project" : "listing your projects",
  );
  if (json) {
    const marked = projects.map((p) => ({ ...p, current: p.id === config.projectId }));
    console.log(JSON.stringify({ projects: marked }));
    return 0;
  }
  printTable(
    ["", "ID", "NAME", "PLAN", "ROLE", "CREATED"],
    projects.map((p) => projectRow(p, config.projectId)),
    "You are in no project: make one (npx runlet projects create --name N), or ask an owner or an operator to add you.",
  );
  if (!config.projectId) {
    if (projects.length > 0)
      console.error("To work in one of them: RUNLET_PROJECT=<its id> npx runlet …");
  } else if (!projects.some((p) => p.id === config.projectId)) {
    console.error(await notListed(config));
  }
  return 0;
}

/** Why the project the CLI works in is not listed: it was deleted, or it is not the caller's. */
async function notListed(config: CliConfig): Promise<string> {
  const path = `/v2/projects/${encodeURIComponent(config.projectId)}`;
  try {
    await callApi(config, "GET", path, "reading the project");
  } catch (err) {
    // cli/deleted-project.ts's words: where the CLI took the id from, and how to work in another.
    if (err instanceof CliError && err.said?.includes(" was deleted: ")) return `The ${err.said}.`;
  }
  const from = config.projectFrom ?? "RUNLET_PROJECT or local.json";
  return `The CLI works in project ${config.projectId} (${from}), which is not one of yours.`;
}

async function create(values: Record<string, string | boolean | undefined>): Promise<number> {
  if (!values.name) throw new CliError(`--name is required\n\n${USAGE}`);
  const config = await loadConfig(process.env, { anyProject: true });
  const made = await callApi<Project>(config, "POST", "/v2/projects", "creating the project", {
    name: values.name,
    ...(values.plan ? { plan: values.plan } : {}),
  });
  if (values.json) console.log(JSON.stringify(made));
  else {
    console.log(`Created project ${made.name} (${made.id}, ${made.plan}); you own it.`);
    console.error(`To work in it: RUNLET_PROJECT=${made.id} npx runlet …`);
  }
  return 0;
}

async function update(
  id: string | undefined,
  values: Record<string, string | boolean | undefined>,
): Promise<number> {
  if (!values.name && !values.plan) throw new CliError(`give --name, --plan or both\n\n${USAGE}`);
  const config = await loadConfig(process.env, { anyProject: true });
  const projectId = id ?? config.projectId;
  if (!projectId)
    throw new CliError(`which project? give its id (npx runlet projects lists them)\n\n${USAGE}`);
  const changes = {
    ...(values.name ? { name: values.name } : {}),
    ...(values.plan ? { plan: values.plan } : {}),
  };
  const path = `/v2/projects/${encodeURIComponent(projectId)}`;
  const now = await callApi<Project>(config, "PATCH", path, "updating the project", changes);
  if (values.json) console.log(JSON.stringify(now));
  else console.log(`Project ${now.id} is now ${now.name} (${now.plan}).`);
  return 0;
}

async function remove(id: string | undefined, values: Record<string, unknown>): Promise<number> {
  if (!id)
    throw new CliError(`which project? give its id (npx runlet projects lists them)\n\n${USAGE}`);
  const config = await loadConfig(process.env, { anyProject: true });
  const path = `/v2/projects/${encodeURIComponent(id)}`;
  const project = await callApi<Project>(config, "GET", path, "reading the project");
  const named = `${project.name} (${project.id})`;
  await confirmOrStop(
    `Delete project ${named}? Its service accounts are revoked, its secrets and members removed, and its audit log can no longer be read (export it first: runlet audit-log --export ndjson). This cannot be undone.`,
    `Kept project ${named}: nothing was deleted`,
    // Not an owner: nothing to ask, the server refuses it (and records the refusal).
    values.yes || project.role !== "owner",
  );
  await callApi(config, "DELETE", path, "deleting the project");
  if (values.json) console.log(JSON.stringify({ deleted: project.id, name: project.name }));
  else console.log(`Deleted project ${named}.`);
  if (project.id === config.projectId)
    console.error(
      `The CLI worked in it (${config.projectFrom}): set ${ENV.project} to another project's id (npx runlet projects lists yours; npx runlet projects create --name NAME makes one).`,
    );
  return 0;
}

export const projects: Command = {
  name: "projects",
  summary: "list your projects, create one (you own it), rename one, or delete one",
  usage: USAGE,
  options: {
    name: { type: "string" },
    plan: { type: "string" },
    all: { type: "boolean" },
    ...YES_OPTION,
  },
  async run({ values, positionals }) {
    const [action = "list", ...extra] = positionals;
    if (!["list", "create", "update", "delete"].includes(action)) {
      throw new CliError(`say list, create, update or delete (not '${action}')\n\n${USAGE}`);
    }
    const words = action === "update" || action === "delete" ? extra.slice(1) : extra;
    if (words.length > 0) {
      throw new CliError(`unexpected '${words.join(" ")}'\n\n${USAGE}`);
    }
    if (action === "delete") {
      takesOnly("projects delete", { values, words: [] }, { options: ["yes"] }, USAGE);
      return remove(extra[0], values);
    }
    if (values.yes) throw new CliError(`--yes is for delete\n\n${USAGE}`);
    if (values.all && action !== "list") throw new CliError(`--all is for list\n\n${USAGE}`);
    if (action === "create") return create(values);
    if (action === "update") return update(extra[0], values);
    if (values.name || values.plan) {
      throw new CliError(`--name and --plan are for create and update\n\n${USAGE}`);
    }
    const config = await loadConfig(process.env, { anyProject: true });
    return list(config, values.json === true, values.all === true);
  },
};
