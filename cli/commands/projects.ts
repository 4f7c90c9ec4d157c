import type { z } from "@hono/zod-openapi";
import type { projectOfCallerSchema } from "../../control-plane/routes/projects-list.ts";
import { CliError, type Command } from "../command.ts";
import { type CliConfig, callApi, loadConfig, printTable } from "../config.ts";

const USAGE = `Usage: runlet projects [list] [--all] [--json]
       runlet projects create --name NAME [--plan hobby|pro|enterprise] [--json]
       runlet projects update [ID] [--name NAME] [--plan hobby|pro|enterprise] [--json]

  list     (also with no subcommand) the projects you are in: id, name, plan, your role, when
           it was made, oldest first; * marks the one the CLI works in. With a service
           account's token, its one project. --json: {projects: [...]}, each with current.
           --all (operators): every project of this Runlet, ROLE '-' where you are in none;
           'RUNLET_PROJECT=<id> runlet users add me --role owner' enters one (audited there)
  create   a new project, owned by the user whose token the CLI has (a service account cannot
           make one). Audited as projects.create in it
  update   renames a project or changes its plan (ID: the one the CLI works in by default);
           owners only. Audited as projects.update in it, with what changed

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
    console.error(
      `The CLI works in project ${config.projectId} (RUNLET_PROJECT or local.json), which is not one of yours.`,
    );
  }
  return 0;
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

export const projects: Command = {
  name: "projects",
  summary: "list your projects, create one (you own it), or rename one",
  usage: USAGE,
  options: { name: { type: "string" }, plan: { type: "string" }, all: { type: "boolean" } },
  async run({ values, positionals }) {
    const [action = "list", ...extra] = positionals;
    if (action !== "list" && action !== "create" && action !== "update") {
      throw new CliError(`say list, create or update (not '${action}')\n\n${USAGE}`);
    }
    const words = action === "update" ? extra.slice(1) : extra;
    if (words.length > 0) {
      throw new CliError(`unexpected '${words.join(" ")}'\n\n${USAGE}`);
    }
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
