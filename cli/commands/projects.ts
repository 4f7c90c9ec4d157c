import { CliError, type Command } from "../command.ts";
import { callApi, loadConfig } from "../config.ts";

const USAGE = `Usage: runlet projects create --name NAME [--plan hobby|pro|enterprise] [--json]

A new project, owned by the user whose token the CLI has (a service account cannot make one).
The other commands work in the project of RUNLET_PROJECT, else of local.json: set
RUNLET_PROJECT to the new one's id to work there. Audited as projects.create in it.`;

interface Project {
  id: string;
  name: string;
  plan: string;
}

export const projects: Command = {
  name: "projects",
  summary: "create a project (you own it)",
  usage: USAGE,
  options: { name: { type: "string" }, plan: { type: "string" } },
  async run({ values, positionals }) {
    const [action] = positionals;
    if (action !== "create") throw new CliError(`say create\n\n${USAGE}`);
    if (!values.name) throw new CliError(`--name is required\n\n${USAGE}`);
    const config = await loadConfig();
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
  },
};
