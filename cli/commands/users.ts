import { ENV } from "../../common/consts.ts";
import { CliError, type Command } from "../command.ts";
import { callProject, loadConfig } from "../config.ts";
import { expiryOf } from "./tokens.ts";

const USAGE = `Usage: runlet users create --name NAME --expires WHEN [--role member|owner] [--operator]
                          [--json]

Adds a new user to this project, with a token printed once (operators only, in a project they
own; audited as users.create there). Hand the token over as you would a password: the user
sets RUNLET_TOKEN to it. A user may also create projects of their own ('runlet projects
create'). See docs/deploy.md.

  --name      the user's name
  --expires   when their token expires: an RFC 3339 time or a duration like 90d
  --role      member (default: may deploy and run) or owner (may also manage tokens, secrets
              and read the audit log) of this project
  --operator  the user runs this Runlet too: its hosts, and adding users`;

interface Made {
  id: string;
  name: string;
  role: string;
  operator: boolean;
  expiresAt: string;
  token: string;
}

export const users: Command = {
  name: "users",
  summary: "add a user to the project, with their token (operators only)",
  usage: USAGE,
  options: {
    name: { type: "string" },
    expires: { type: "string" },
    role: { type: "string" },
    operator: { type: "boolean" },
  },
  async run({ values, positionals }) {
    const [action] = positionals;
    if (action !== "create") throw new CliError(`say create\n\n${USAGE}`);
    if (!values.name) throw new CliError(`--name is required\n\n${USAGE}`);
    if (!values.expires) throw new CliError(`--expires is required\n\n${USAGE}`);
    const config = await loadConfig();
    const made = await callProject<Made>(config, "POST", "/users", "adding the user", {
      name: values.name,
      expiresAt: expiryOf(String(values.expires)),
      ...(values.role ? { role: values.role } : {}),
      ...(values.operator ? { operator: true } : {}),
    });
    if (values.json) {
      console.log(JSON.stringify(made));
      return 0;
    }
    const operator = made.operator ? ", an operator" : "";
    console.error(
      `Added ${made.name} (${made.id}, ${made.role}${operator}); the token expires ${made.expiresAt}. It is shown only this once:`,
    );
    console.log(made.token);
    console.error(
      `They set ${ENV.baseUrl}=${config.baseUrl} ${ENV.apiUrl}=${config.apiUrl} ${ENV.project}=${config.projectId} and ${ENV.token} to that token.`,
    );
    return 0;
  },
};
