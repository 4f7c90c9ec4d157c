import type { z } from "zod";
import { answeredNote } from "../../common/protocol/runs.ts";
import type { runSchema } from "../../control-plane/routes/runs-list.ts";
import { CliError, type Command, pageLimit, takesOnly } from "../command.ts";
import { type CliConfig, callProject, loadConfig, printTable } from "../config.ts";
import { fetchPages } from "../pages.ts";

const USAGE = `Usage: runlet runs [--app A] [--status S] [--async | --sync] [--webhook STATE] [--limit N] [--all] [--json]

The project's runs, sync and async, newest first.

  --app       only this app's runs (an app deleted since included, while its runs are kept);
              a name that is neither an app of the project nor has runs kept is an error
  --status    queued, running, success, failure or cancelled (not failed: that is --webhook's)
  --async     only background runs (--sync: only synchronous ones)
  --webhook   only runs whose webhook delivery is pending, delivered, failed or cancelled (a
              run cancelled before its delivery)
  --limit     runs per page, 1 to 200 (default 50)
  --all       follow the pages to the end`;

/** A run as the runs API lists it. */
type Run = z.infer<typeof runSchema>;

/**
 * `--app` that matched no run: fine for an app of the project ("No runs match"), and for one
 * deleted since whose runs the index still keeps (the filters left them out); any other name is
 * a mistake (a typo said "No runs match" and exited 0), said as `apps show` says it: a 404.
 * `narrowed`: filters beside the app were given, so the index is asked for any run of it.
 */
export async function mustBeKnownApp(
  config: CliConfig,
  app: string,
  narrowed: boolean,
): Promise<void> {
  const name = encodeURIComponent(app);
  try {
    await callProject(config, "GET", `/apps/${name}`, "reading the app");
    return;
  } catch (err) {
    if (!(err instanceof CliError) || err.answer?.status !== 404) throw err;
    if (narrowed) {
      const any = await callProject<{ runs: unknown[] }>(
        config,
        "GET",
        `/runs?app=${name}&limit=1`,
        "listing runs",
      );
      if (any.runs.length > 0) return;
    }
    const said = `${err.said ?? `app '${app}' is not deployed`}, and no run of it is kept`;
    throw new CliError(`${said} (runlet apps lists the project's apps)`, err.answer, said);
  }
}

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
    const query = new URLSearchParams();
    for (const key of ["app", "status", "webhook"] as const) {
      const value = values[key];
      if (typeof value === "string") query.set(key, value);
    }
    if (typeof values.limit === "string") query.set("limit", pageLimit(values.limit));
    const config = await loadConfig();
    if (values.async) query.set("async", "true");
    if (values.sync) query.set("async", "false");
    const all = values.all === true;
    const { items, last } = await fetchPages<Run, "runs">(config, "/runs", "runs", query, {
      all,
      what: "listing runs",
    });
    if (items.length === 0 && typeof values.app === "string") {
      const narrowed = ["status", "webhook", "async", "sync"].some((k) => values[k] !== undefined);
      await mustBeKnownApp(config, values.app, narrowed);
    }
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
          `${r.status}${answeredNote(r.statusCode)}`,
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
