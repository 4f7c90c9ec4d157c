import { CliError, type Command, parse } from "./command.ts";
import { apps } from "./commands/apps.ts";
import { auditLog } from "./commands/audit-log.ts";
import { backup } from "./commands/backup.ts";
import { dashboard } from "./commands/dashboard.ts";
import { deploy } from "./commands/deploy.ts";
import { host } from "./commands/host.ts";
import { hosts } from "./commands/hosts.ts";
import { init } from "./commands/init.ts";
import { keys } from "./commands/keys.ts";
import { logs } from "./commands/logs.ts";
import { projects } from "./commands/projects.ts";
import { redeliver } from "./commands/redeliver.ts";
import { run } from "./commands/run.ts";
import { runs } from "./commands/runs.ts";
import { secrets } from "./commands/secrets.ts";
import { start } from "./commands/start.ts";
import { cancel, status } from "./commands/status.ts";
import { tokens } from "./commands/tokens.ts";
import { users } from "./commands/users.ts";

const COMMANDS: Command[] = [
  start,
  deploy,
  run,
  status,
  cancel,
  redeliver,
  apps,
  runs,
  logs,
  tokens,
  secrets,
  auditLog,
  dashboard,
  hosts,
  keys,
  host,
  init,
  projects,
  users,
  backup,
];

function usage(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  return [
    "Usage: runlet <command> [options]",
    "",
    "Commands:",
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    "",
    "Every command takes --help, and --json for machine-readable output.",
    "Credentials come from RUNLET_HOME/local.json (written by `runlet start` or `runlet init`; without",
    "RUNLET_HOME, the nearest .runlet/local.json here or above) or from RUNLET_BASE_URL,",
    "RUNLET_API_URL, RUNLET_PROJECT and RUNLET_TOKEN.",
  ].join("\n");
}

/** Runs the CLI; returns the process exit code. */
export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === "help" || name === "--help" || name === "-h") {
    console.log(usage());
    return name ? 0 : 1;
  }
  const cmd = COMMANDS.find((c) => c.name === name);
  if (!cmd) {
    const message = `unknown command '${name}'`;
    if (rest.includes("--json")) console.log(JSON.stringify({ message }));
    else console.error(`runlet: ${message}\n\n${usage()}`);
    return 1;
  }
  // From the words as given: a script's --json holds for a line that does not parse, too.
  let json = rest.includes("--json");
  try {
    const { values, positionals } = parse(cmd, rest);
    if (values.help) {
      console.log(cmd.usage);
      return 0;
    }
    json = values.json === true;
    return await cmd.run({ values, positionals });
  } catch (err) {
    if (!(err instanceof CliError)) throw err;
    // A script gets the reason alone, not the usage text a person is shown after it.
    const reason = err.message.split("\n\nUsage:")[0];
    if (json) console.log(JSON.stringify({ message: reason, ...err.answer }));
    else console.error(`runlet ${cmd.name}: ${err.message}`);
    return 1;
  }
}
