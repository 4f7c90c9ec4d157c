/**
 * How a custom replica's failed start reads: the words of its 502 (and of a deploy's refusal).
 */
import { MAX_START_TIMEOUT_S } from "../../../common/app-limits.ts";
import { startLimitWords } from "../../pool/workload.ts";

/**
 * What to quote of a process that died starting: its first line naming an error (Node prints
 * the error, then its stack, then its own version: "Node.js v20.20.2", which was quoted), else
 * its last line.
 */
export function lastWordsOf(output: string): string | undefined {
  const lines = output
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "" && !/^Node\.js v\d/.test(l));
  return lines.find((l) => /^(\w*Error|Uncaught)\b|^\w+Error:/.test(l)) ?? lines.at(-1);
}

export interface NeverHealthy {
  /** The healthcheck's path. */
  path: string;
  port: number;
  limitMs: number;
  /** The last probe's outcome: "no answer", "it answered 503", ... */
  last: string;
  /** What the process wrote so far. */
  output: string;
}

/**
 * Why a replica still running was not healthy in time. A server that wrote something and never
 * answered is most often one loading a model or data before it listens (a Python app's
 * `print("loading model...")` then 35 s of loading): that read "does it listen on PORT?", as if
 * it had the port wrong, and said neither the limit's part in it nor what to do. Whether the
 * port took connections does not tell them apart: under bubblewrap the host connects to the
 * sandbox's relay, which takes them before the app listens.
 */
export function neverHealthyDetail(start: NeverHealthy): string {
  const { path, port, last } = start;
  const limit = `${start.limitMs / 1000} s`;
  const said = lastWordsOf(start.output);
  if (last === "no answer" && said !== undefined)
    return `nothing answered ${path} on PORT (${port}) within ${startLimitWords(start.limitMs)}, while its process ran (its last output: ${JSON.stringify(said.slice(0, 200))}): a server that loads a model or data first must answer within ${limit}: raise start_timeout (at most ${MAX_START_TIMEOUT_S} s), or listen at once and load in a background thread, with requests waiting for it (docs/api.md, "Slow starts"); or it listens on another port than PORT`;
  // Nothing answering at all, nothing said: most often a server on another port than PORT.
  const hint = last.startsWith("it answered") ? last : `${last}: does it listen on PORT (${port})?`;
  return `${path} did not answer 2xx within ${startLimitWords(start.limitMs)} (last, ${hint})`;
}
