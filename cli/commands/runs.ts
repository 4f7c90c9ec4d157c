import type { z } from "zod";
import type { runSchema } from "../../control-plane/routes/runs-list.ts";
import { CliError, type Command, takesOnly } from "../command.ts";
import { fetchPages, loadConfig, printTable } from "../config.ts";

const USAGE = `Usage: runlet runs [--app A] [--status S] [--async | --sync] [--webhook STATE] [--limit N] [--all] [--json]

The project's runs, sync and async, newest first.

  --app       only this app's runs
  --status    queued, running, success, failure or cancelled
  --async     only background runs (--sync: only synchronous ones)
  --webhook   only runs whose webhook delivery is pending, delivered or failed
  --limit     runs per page, 1 to 200 (default 50)
  --all       follow the pages to the end`;

/** A run as the runs API lists it. */
type Run = z.infer<typeof runSchema>;

export const runs: Command = {
  name: "runs",
  summary: "list the project's recent runs",
  usage: USAGE,
  options: {
    app: { type: "string" },
    status: { type: "string" },
    webhook: { type: "string" },
    async: { type: "boolean" },
    sync: { type: "boolean" },
    limit: { type: "string" },
    all: { type: "boolean" },
  },
  async run({ values, positionals }) {
    // It takes no words: a stray one (a value without its option) was ignored.
    takesOnly("runs", { values: {}, words: positionals }, {}, USAGE);
    if (values.async && values.sync)
      throw new CliError(`say --async or --sync, not both\n\n${USAGE}`);
    const config = await loadConfig();
    const query = new URLSearchParams();
    for (const key of ["app", "status", "webhook", "limit"] as const) {
      const value = values[key];
      if (typeof value === "string") query.set(key, value);
    }
    if (values.async) query.set("async", "true");
    if (values.sync) query.set("async", "false");
    const all = values.all === true;
    const { items, last } = await fetchPages<Run, "runs">(config, "/runs", "runs", query, {
      all,
      what: "listing runs",
    });
    if (values.json) {
      console.log(JSON.stringify(all ? { runs: items } : last));
    } else {
      printTable(
        ["RUN", "APP", "FUNCTION", "MODE", "STATUS", "CREATED", "TIME"],
        items.map((r) => [
          r.id,
          r.app,
          r.function,
          r.async ? "async" : "sync",
          r.status,
          r.createdAt,
          r.runTimeMs === null ? "-" : `${r.runTimeMs.toFixed(1)} ms`,
        ]),
        "No runs match.",
      );
    }
    // Notes go to stderr: stdout holds the table alone, for a script's \`| tail -n +2\`.
    if (!values.json && !all && last.hasMore) {
      console.error("More runs: --all, or narrow with --app/--status.");
    }
    return 0;
  },
};
