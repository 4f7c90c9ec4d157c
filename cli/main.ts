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
import { tokenSource } from "./config.ts";
import { VERSION } from "./version.ts";

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
    "Every command takes --help, and --json for machine-readable output;",
    "`runlet --version` (-v) prints the CLI's version.",
    "Credentials come from RUNLET_HOME/local.json (written by `runlet start` or `runlet init`; without",
    "RUNLET_HOME, the nearest .runlet/local.json here or above) or from RUNLET_BASE_URL,",
    "RUNLET_API_URL, RUNLET_PROJECT and RUNLET_TOKEN (a service account's token names its project).",
  ].join("\n");
}

/**
 * Runs the CLI; returns the process exit code: 0 done, 1 failed (a command line it cannot
 * take, a server's refusal, a server it cannot reach; README.md, "The CLI in scripts and CI").
 */
export async function main(argv: string[]): Promise<number> {
  // `runlet --json apps`, as scripts write global flags before the command, is `runlet apps --json`.
  if (argv[0] === "--json" && argv.length > 1) return main([...argv.slice(1), "--json"]);
  const [name, ...rest] = argv;
  if (name === "--version" || name === "-v") {
    // Its version alone, as `node --version` says its own; `--json` for a script.
    console.log(
      rest.includes("--json") ? JSON.stringify({ version: VERSION }) : `runlet ${VERSION}`,
    );
    return 0;
  }
  if (!name || name === "help" || name === "--help" || name === "-h") {
    // `runlet help deploy` is `runlet deploy --help`.
    const asked = name === "help" ? COMMANDS.find((c) => c.name === rest[0]) : undefined;
    // `runlet help deplyo` printed the general usage and exited 0, as if it had been asked.
    if (name === "help" && rest[0] && !rest[0].startsWith("-") && !asked) return main(rest);
    // No command at all is a mistake: the usage goes to stderr, as every usage error's does.
    if (!name) console.error(usage());
    else console.log(asked?.usage ?? usage());
    return name ? 0 : 1;
  }
  const cmd = COMMANDS.find((c) => c.name === name);
  if (!cmd) {
    const message = `unknown command '${name}'`;
    const json = rest.includes("--json");
    if (json) console.log(JSON.stringify({ message }));
    console.error(json ? `runlet: ${message}` : `runlet: ${message}\n\n${usage()}`);
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
    if (!(err instanceof CliError)) {
      // A fault of the CLI's own: its stack on stderr, and still one document on stdout.
      if (json) console.log(JSON.stringify({ message: `runlet ${cmd.name} failed: ${err}` }));
      throw err;
    }
    // A script gets the reason alone, not the usage text a person is shown after it: on stdout
    // as JSON, and on stderr for its log, as without --json.
    const reason = err.message.split("\n\nUsage:")[0] ?? err.message;
    if (json) console.log(JSON.stringify({ message: reason, ...err.answer }));
    const refusedToken = err.answer?.status === 401 && cmd.name !== "init";
    const line = `${json ? reason : err.message}${refusedToken ? ` (${tokenSource()})` : ""}`;
    console.error(`runlet ${cmd.name}: ${line}`);
    return 1;
  }
}
