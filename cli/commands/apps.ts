import { DEFAULT_START_TIMEOUT_S } from "../../common/app-limits.ts";
import { type RunsNow, replicasNowText, runsNowText, stalledText } from "../../common/app-now.ts";
import { KEPT_BUNDLES } from "../../control-plane/bundles.ts";
import type { AppView, ListedApp } from "../../control-plane/routes/apps-read.ts";
import type { AppReplicas } from "../../control-plane/routes/apps-replicas.ts";
import { CliError, type Command, takesOnly } from "../command.ts";
import { type CliConfig, callProject, loadConfig, printTable } from "../config.ts";
import { confirmOrStop, YES_OPTION } from "../confirm.ts";
import { rollback, versions } from "./apps-rollback.ts";

const USAGE = `Usage: runlet apps [--json]
       runlet apps show <name> [--json]
       runlet apps versions <name> [--json]
       runlet apps delete <name> [--yes] [--json]
       runlet apps rollback <name> [--to N] [--no-start-check] [--json]

  (none)   the project's apps: name, live version, runtime, async runs queued and running
           (the run store's queue: every accepted run not started yet), last deploy; --json
           prints the API's answer, each app with runs: {queued, running}
  show     one app: its live version, scaling and limits, its async runs queued and running,
           its replicas now and the hosts they are on; --json prints {app, replicas}, the
           API's two answers
  versions the app's versions, newest first: who deployed each and when, its runtime, and
           whether its code can be rolled back to (the ${KEPT_BUNDLES} newest keep their files); --json
           prints the API's answer
  delete   stops the app's replicas and deletes it with its deployments (audited); calls of it
           are 404 within 10 s (the run API keeps what it learnt of an app for 10 s; a run
           accepted meanwhile fails), and a later deploy of the same name starts at version 1.
           Its queued async runs fail as they come to a host, its running ones finish first;
           its runs stay listed. On a terminal it asks first, naming how many versions and runs
           go (default No): --yes (-y) answers yes. A script (stdin or stdout not a terminal)
           is not asked
  rollback makes an earlier version's code live again, as a new version: version N's files
           and runlet.toml, as they were, deployed as the next version (v3's as v6), the way
           runlet deploy goes: a replica of it starts on a runtime host first, and one that
           fails to is refused (exit 1), the live version answering on. Audited as a deploy.
           Only the ${KEPT_BUNDLES} newest versions keep their files: for an older one, deploy its folder.
           --to N            the version to roll back to (default: the one before the live
                             one; after a rollback, that is the version rolled back from)
           --no-start-check  make it live without starting a replica of it first
           --json            prints the API's answer (the new version) with rolledBackFrom: N`;

/**
 * An app's async runs queued and running. A control plane older than this CLI does not say them
 * (`runs` came on 2026-11-26): `unknown`, where the command failed with a TypeError.
 */
function runsOf(
  runs: RunsNow | undefined,
  unknown = "not said by this control plane (older than this CLI)",
): string {
  return runs ? runsNowText(runs) : unknown;
}

/** `runlet apps show <name>`: the app and its replicas now, as the dashboard's app page has them. */
async function show(config: CliConfig, name: string, json: boolean): Promise<number> {
  const path = `/apps/${encodeURIComponent(name)}`;
  const [app, replicas] = await Promise.all([
    callProject<AppView>(config, "GET", path, "reading the app"),
    callProject<AppReplicas>(config, "GET", `${path}/replicas`, "reading its replicas"),
  ]);
  if (json) {
    console.log(JSON.stringify({ app, replicas }));
    return 0;
  }
  const { scaling: s } = app;
  const rows: Array<[string, string]> = [
    ["version", `${app.version} (${app.runtime}), deployed ${app.updatedAt}`],
    [
      "scaling",
      `${s.minReplicas} to ${s.maxReplicas} replicas, ${s.replicaConcurrency} ${s.replicaConcurrency === 1 ? "call" : "calls"} each (capacity ${s.capacity}), cooldown ${s.cooldown} s`,
    ],
    [
      "limits",
      `response_grace_period ${app.responseGracePeriod} s, queue_timeout ${app.queueTimeout} s, start_timeout ${app.startTimeout ?? DEFAULT_START_TIMEOUT_S} s`,
    ],
    [
      "functions",
      app.functions?.join(", ") ??
        (app.runtime === "custom"
          ? "— (a custom app: its server answers any path)"
          : "not known (deployed without the start check, or by an older Runlet)"),
    ],
    [
      "async runs",
      runsOf(replicas.runs) +
        (replicas.runs ? stalledText(replicas.runs, replicas.hostsTakingWork) : ""),
    ],
    ["replicas now", replicasNowText(replicas)],
    [
      "on hosts",
      replicas.hosts
        .map((h) => `${h.name} (${h.replicas}, ${h.busy} busy, ${h.state})`)
        .join("; ") || "none now",
    ],
  ];
  console.log(app.name);
  for (const [label, text] of rows) console.log(`  ${label.padEnd(13)} ${text}`);
  return 0;
}

/** What `apps delete` asks a person: what goes with the app, and what becomes of its runs. */
async function deleteQuestion(config: CliConfig, name: string): Promise<string> {
  const path = `/apps/${encodeURIComponent(name)}`;
  const [{ versions }, { runs }] = await Promise.all([
    callProject<{ versions: Array<{ version: number }> }>(
      config,
      "GET",
      `${path}/versions`,
      "reading the app's versions",
    ),
    callProject<{ runs?: RunsNow }>(config, "GET", `${path}/replicas`, "reading its runs"),
  ]);
  const live = versions[0] ? `v${versions[0].version} live, ` : "";
  const count = `${versions.length} ${versions.length === 1 ? "version" : "versions"}`;
  const queue = runs
    ? `Its async runs now: ${runs.queued} queued, which fail as they come to a host; ${runs.running} running, which finish first.`
    : "Its queued async runs fail as they come to a host; running ones finish first.";
  return `Delete app ${name} (${live}${count}, with their files and deployment records)? Its replicas stop and calls of it are 404 within 10 s. ${queue} Its runs stay listed. This cannot be undone.`;
}

export const apps: Command = {
  name: "apps",
  summary: "list the project's apps, show one, delete one, or roll one back",
  usage: USAGE,
  options: { to: { type: "string" }, "no-start-check": { type: "boolean" }, ...YES_OPTION },
  async run({ values, positionals }) {
    const [sub, name, ...extra] = positionals;
    if (sub === "rollback") {
      if (!name || extra.length > 0)
        throw new CliError(`apps rollback takes one app name\n\n${USAGE}`);
      return rollback(await loadConfig(), name, {
        to: values.to as string | undefined,
        json: values.json === true,
        startCheck: !values["no-start-check"],
      });
    }
    // --to and --no-start-check are rollback's; --yes is delete's.
    const options = sub === "delete" ? ["yes"] : [];
    takesOnly(sub ? `apps ${sub}` : "apps", { values, words: [] }, { options }, USAGE);
    const config = await loadConfig();
    if (sub === "delete") {
      if (!name || extra.length > 0)
        throw new CliError(`apps delete takes one app name\n\n${USAGE}`);
      await confirmOrStop(
        () => deleteQuestion(config, name),
        `Kept ${name}: nothing was deleted`,
        values.yes,
      );
      await callProject(config, "DELETE", `/apps/${encodeURIComponent(name)}`, "deleting the app");
      console.log(values.json ? JSON.stringify({ name, deleted: true }) : `Deleted ${name}.`);
      return 0;
    }
    if (sub === "versions") {
      if (!name || extra.length > 0)
        throw new CliError(`apps versions takes one app name\n\n${USAGE}`);
      return versions(config, name, values.json === true);
    }
    if (sub === "show") {
      if (!name || extra.length > 0) throw new CliError(`apps show takes one app name\n\n${USAGE}`);
      return show(config, name, values.json === true);
    }
    if (sub !== undefined) throw new CliError(`unknown subcommand '${sub}'\n\n${USAGE}`);
    const body = await callProject<{ apps: ListedApp[] }>(config, "GET", "/apps", "listing apps");
    // A table under a header row, as runs, projects, tokens and secrets print theirs.
    if (values.json) console.log(JSON.stringify(body));
    else
      printTable(
        ["NAME", "VERSION", "RUNTIME", "ASYNC RUNS", "DEPLOYED"],
        body.apps.map((a) => [
          a.name,
          `v${a.version}`,
          a.runtime,
          runsOf(a.runs, "? queued"),
          a.updatedAt,
        ]),
        "No apps yet: npx runlet deploy examples/hello",
      );
    return 0;
  },
};
