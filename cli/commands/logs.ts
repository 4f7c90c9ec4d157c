import { exitOf } from "../../common/exit-status.ts";
import type { AppOutput, RunLogs } from "../../common/protocol/host.ts";
import { CliError, type Command } from "../command.ts";
import { callProject, loadConfig } from "../config.ts";
import { formatLine } from "./log-lines.ts";
import { followRunLogs } from "./logs-follow.ts";

const USAGE = `Usage: runlet logs <run_id> [--follow] [--json]
       runlet logs --app <name> [--json]

What a run wrote while it ran (ctx.log, console.*, process.stdout and process.stderr), one line
each: time, stream (stdout or stderr; stderr lines in red on a terminal) and text. --json
prints the API's answer, {runId, lines: [{time, stream, text, seq}], truncated}.

--follow (-f): the run's lines as it writes them, read again every second until it ends (a
queued run is waited for); then a note on stderr says how it ended, and so does the exit code,
as with runlet status --wait: 0 if it ended success, 1 if failure or cancelled, so a script can
follow a background run and go on only if it succeeded: runlet logs "$id" -f && next-step.
With --json, one line of output per line of the run: {time, stream, text, seq}. Ctrl-C stops
following, not the run. Runlet not answering, busy or failing (a control plane restarting) is
read again for up to 60 s in a row, said on stderr, before the command gives up (exit 1).

Run ids are in the output of \`runlet run\` and \`runlet runs\`. The runtime host keeps the newest
64 KiB of each of its latest 500 runs, on its disk, across its restarts; custom-runtime apps'
output is not split by run.

With --app: everything the app's replicas wrote, as a container's log (a custom app's server,
a managed app's module load and timers, its runs' lines too), replica by replica, the newest
first: those running now and the last few that ended (a crash's last words). Each keeps its
newest 256 KiB, in memory on its runtime host. --json prints the API's answer,
{replicas: [{host, pid, version, state, startedAt, endedAt, exit, dropped, lines}],
unreachable}; an ended replica's header says how its process ended (exited (code 3), exited
(signal SIGKILL)), as its exit does: {code, signal}.`;

export const logs: Command = {
  name: "logs",
  summary: "show what a run wrote (its stdout and stderr)",
  usage: USAGE,
  options: { app: { type: "string" }, follow: { type: "boolean", short: "f" } },
  async run({ values, positionals }) {
    if (typeof values.app === "string") {
      if (positionals.length > 0)
        throw new CliError(`give a run id or --app, not both\n\n${USAGE}`);
      if (values.follow === true)
        throw new CliError(
          `--follow follows one run (runlet logs <run_id> --follow); --app shows what the app's replicas wrote so far`,
        );
      return appOutput(values.app, values.json === true);
    }
    const [runId, ...extra] = positionals;
    if (!runId || extra.length > 0) throw new CliError(`give one run id\n\n${USAGE}`);
    const config = await loadConfig();
    const color = process.stdout.isTTY === true && !process.env.NO_COLOR;
    if (values.follow === true)
      return followRunLogs(config, runId, { json: values.json === true, color });
    const answer = await callProject<RunLogs>(
      config,
      "GET",
      `/runs/${encodeURIComponent(runId)}/logs`,
      `reading the logs of ${runId}`,
    );
    if (values.json) {
      console.log(JSON.stringify(answer));
      return 0;
    }
    if (answer.truncated)
      console.error("(older lines were dropped: a run keeps its newest 64 KiB)");
    for (const line of answer.lines) console.log(formatLine(line, color));
    if (answer.lines.length === 0) console.error(`Run ${runId} wrote nothing.`);
    return 0;
  },
};

/** `runlet logs --app`: each replica's output under a line that says which replica it is. */
async function appOutput(app: string, json: boolean): Promise<number> {
  const config = await loadConfig();
  const answer = await callProject<AppOutput>(
    config,
    "GET",
    `/apps/${encodeURIComponent(app)}/output`,
    `reading the output of ${app}`,
  );
  if (json) {
    console.log(JSON.stringify(answer));
    return 0;
  }
  showAppOutput(app, answer, process.stdout.isTTY === true && !process.env.NO_COLOR);
  return 0;
}

/** Prints `answer` as `runlet logs --app` does: the lines on stdout, the notes on stderr. */
export function showAppOutput(app: string, answer: AppOutput, color: boolean): void {
  for (const r of answer.replicas) {
    const since = r.endedAt ? `${r.startedAt} to ${r.endedAt}` : `since ${r.startedAt}`;
    const replica = `replica ${r.pid ?? "?"} of v${r.version} on ${r.host}`;
    const ended = r.exit ? ` (${exitOf(r.exit)})` : "";
    console.log(`== ${replica}: ${r.state}${ended}, ${since}`);
    // A note, not a line of output: on stderr, naming the replica it is about.
    if (r.dropped > 0)
      console.error(`(${replica}: ${r.dropped} earlier bytes were dropped: it keeps 256 KiB)`);
    for (const line of r.lines) console.log(formatLine(line, color));
  }
  if (answer.replicas.length === 0)
    console.error(
      `No replica of ${app} has run since its hosts started (replicas start at its first call).`,
    );
  if (answer.unreachable > 0)
    console.error(
      `${answer.unreachable} runtime host(s) did not answer: their replicas are not shown.`,
    );
}
