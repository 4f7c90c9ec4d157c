import type { RunLogs } from "../../common/protocol/host.ts";
import { CliError, type Command } from "../command.ts";
import { callProject, loadConfig } from "../config.ts";

const USAGE = `Usage: runlet logs <run_id> [--json]

What a run wrote while it ran (ctx.log, console.*, process.stdout and process.stderr), one line
each: time, stream (stdout or stderr; stderr lines in red on a terminal) and text. --json
prints the API's answer, {runId, lines: [{time, stream, text}], truncated}.

Run ids are in the output of \`runlet run\` and \`runlet runs\`. The runtime host keeps the newest
64 KiB of each of its latest runs, in memory; custom-runtime apps' output is not split by run.`;

/** Control characters of the app's output, shown escaped: they could drive the terminal. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching them is the point.
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f]/g;

const escapeControl = (text: string) =>
  text.replace(CONTROL, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`);

/** One line for the terminal: `time stream text`; stderr in red if `color`. */
export function formatLine(line: RunLogs["lines"][number], color = false): string {
  const text = `${line.time}  ${line.stream}  ${escapeControl(line.text)}`;
  return color && line.stream === "stderr" ? `\x1b[31m${text}\x1b[39m` : text;
}

export const logs: Command = {
  name: "logs",
  summary: "show what a run wrote (its stdout and stderr)",
  usage: USAGE,
  options: {},
  async run({ values, positionals }) {
    const [runId, ...extra] = positionals;
    if (!runId || extra.length > 0) throw new CliError(`give one run id\n\n${USAGE}`);
    const config = await loadConfig();
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
    const color = process.stdout.isTTY === true && !process.env.NO_COLOR;
    for (const line of answer.lines) console.log(formatLine(line, color));
    if (answer.lines.length === 0) console.error(`Run ${runId} wrote nothing.`);
    return 0;
  },
};
