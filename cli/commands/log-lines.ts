import type { RunLogs } from "../../common/protocol/host.ts";

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
