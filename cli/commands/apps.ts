import type { ListedApp } from "../../control-plane/routes/apps-read.ts";
import { CliError, type Command } from "../command.ts";
import { callProject, loadConfig } from "../config.ts";

const USAGE = `Usage: runlet apps [--json]
       runlet apps delete <name> [--json]

  (none)   the project's apps: name, live version, runtime, async runs queued and running
           (the run store's queue: every accepted run not started yet), last deploy; --json
           prints the API's answer, each app with runs: {queued, running}
  delete   stops the app's replicas and deletes it with its deployments (audited); calls of it
           are 404 within 10 s (the run API keeps what it learnt of an app for 10 s; a run
           accepted meanwhile fails), and a later deploy of the same name starts at version 1`;

export const apps: Command = {
  name: "apps",
  summary: "list the project's apps, or delete one",
  usage: USAGE,
  options: {},
  async run({ values, positionals }) {
    const config = await loadConfig();
    const [sub, name, ...extra] = positionals;
    if (sub === "delete") {
      if (!name || extra.length > 0)
        throw new CliError(`apps delete takes one app name\n\n${USAGE}`);
      await callProject(config, "DELETE", `/apps/${encodeURIComponent(name)}`, "deleting the app");
      console.log(values.json ? JSON.stringify({ name, deleted: true }) : `Deleted ${name}.`);
      return 0;
    }
    if (sub !== undefined) throw new CliError(`unknown subcommand '${sub}'\n\n${USAGE}`);
    const body = await callProject<{ apps: ListedApp[] }>(config, "GET", "/apps", "listing apps");
    if (values.json) {
      console.log(JSON.stringify(body));
    } else if (body.apps.length === 0) {
      console.error("No apps yet: npx runlet deploy examples/hello");
    } else {
      for (const a of body.apps) {
        const runs = `${a.runs.queued} queued, ${a.runs.running} running`;
        console.log(
          `${a.name.padEnd(24)} v${String(a.version).padEnd(5)} ${a.runtime.padEnd(8)} ${runs.padEnd(24)} ${a.updatedAt}`,
        );
      }
    }
    return 0;
  },
};
