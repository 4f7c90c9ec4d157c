/**
 * `runlet logs <run_id> --follow`: a run's lines as it writes them, until it ends. Polls the
 * management API once a second for the whole lines past the last one printed (`?after=`, by
 * their `seq`), and the runs index for the run's state; a run still queued, or started but
 * not yet writing, is waited for. After its end one last read prints what it wrote last (its
 * unfinished line ended with it), a note on stderr says how it ended, and so does the exit code,
 * as `runlet status --wait`'s: 0 for success, 1 for failure or cancelled.
 */
import type { RunLogs } from "../../common/protocol/host.ts";
import { isCustomRequest, isEnded } from "../../common/protocol/runs.ts";
import { CliError } from "../command.ts";
import { type CliConfig, callProject } from "../config.ts";
import { endedExitCode, notIndexedYet } from "../run-api.ts";
import { formatLine } from "./log-lines.ts";

/** How often the log and the run's state are read again. */
export const FOLLOW_POLL_MS = 1_000;

/**
 * How long reads may fail in a row for want of Runlet (no answer, 429, 5xx) before the command
 * gives up: a control plane that `runlet start` restarts is back within seconds. It gave up at
 * the first such read, and `logs -f "$id" && next-step` stopped as if the run had failed.
 */
export const FOLLOW_PATIENCE_MS = 60_000;

interface IndexedRun {
  app: string;
  function: string;
  status: string;
  error?: { message: string };
}

/** Whole lines only: an unfinished last line comes again, longer, once it ends. */
type Line = RunLogs["lines"][number];

export async function followRunLogs(
  config: CliConfig,
  runId: string,
  options: { json: boolean; color: boolean; pollMs?: number; patienceMs?: number },
): Promise<number> {
  const patiently = patient(options.patienceMs ?? FOLLOW_PATIENCE_MS, options.pollMs);
  const path = `/runs/${encodeURIComponent(runId)}`;
  const what = `following the logs of ${runId}`;
  let after = 0;
  let waiting: string | undefined;
  const print = (line: Line) => {
    if (options.json) console.log(JSON.stringify(line));
    else console.log(formatLine(line, options.color));
  };
  for (;;) {
    // The state first: lines read after it include all it wrote up to that state.
    const run = await patiently(() => stateOf(config, path, what, runId));
    if (!run) {
      if (waiting === undefined) console.error(`(waiting for ${runId}: it was just accepted)`);
      waiting = "index";
      await pause(options.pollMs);
      continue;
    }
    const ended = isEnded(run.status);
    let logs: RunLogs | undefined;
    try {
      logs = await patiently(() =>
        callProject<RunLogs>(config, "GET", `${path}/logs?after=${after}`, what),
      );
    } catch (err) {
      // No logs (yet): a queued run has none, nor a run whose host has not opened them. An ended
      // run without a line kept (cancelled while queued, failed before it ran) is said so, with
      // how it ended below; any other refusal is the command's answer.
      const noLogs = err instanceof CliError && err.answer?.status === 404;
      if (noLogs && ended) console.error(`(no lines: ${err.said ?? err.message})`);
      else if (!noLogs || isCustomRequest(run.function)) throw err;
      else {
        const why = run.status === "queued" ? "it is queued" : "it has written nothing yet";
        if (waiting !== why) console.error(`(waiting for ${runId}: ${why})`);
        waiting = why;
      }
    }
    if (logs) {
      if (logs.truncated && after === 0)
        console.error("(older lines were dropped: a run keeps its newest 64 KiB)");
      for (const line of logs.lines) {
        if (line.seq !== undefined) {
          // The host keeps a run's newest 64 KiB: lines written faster than a poll can be gone.
          if (after > 0 && line.seq > after + 1)
            console.error(
              `(${line.seq - after - 1} lines were dropped: a run keeps its newest 64 KiB)`,
            );
          print(line);
          after = line.seq;
        } else if (ended) print(line);
      }
    }
    if (ended) {
      const error = run.error ? `: ${run.error.message}` : "";
      console.error(`(${runId} ended: ${run.status}${error})`);
      // How it ended is the exit code, as for `status --wait`: `logs -f "$id" && next-step`.
      return endedExitCode(run.status);
    }
    await pause(options.pollMs);
  }
}

const pause = (ms = FOLLOW_POLL_MS) => new Promise((resolve) => setTimeout(resolve, ms));

/** A failure that says nothing of the run: Runlet not answering, busy, or failing a moment. */
function passing(err: unknown): boolean {
  if (!(err instanceof CliError)) return false;
  const status = err.answer?.status;
  return status === undefined || status === 429 || status >= 500;
}

/**
 * Reads that ride out Runlet's passing failures, saying so once, for `patienceMs` in a row at
 * most (then the last failure is the command's); any other failure is thrown at once.
 */
function patient(patienceMs: number, pollMs?: number) {
  let failingSince: number | undefined;
  return async <T>(read: () => Promise<T>): Promise<T> => {
    for (;;) {
      try {
        const value = await read();
        if (failingSince !== undefined) console.error("(Runlet answers again: following on)");
        failingSince = undefined;
        return value;
      } catch (err) {
        if (!passing(err)) throw err;
        const now = Date.now();
        if (failingSince !== undefined && now - failingSince >= patienceMs) throw err;
        if (failingSince === undefined) {
          failingSince = now;
          const message = err instanceof Error ? err.message : String(err);
          console.error(`(${message}: reading again, for up to ${patienceMs / 1000} s)`);
        }
        await pause(pollMs);
      }
    }
  };
}

/** The run as the runs index has it; undefined for one it does not have yet (`notIndexedYet`). */
async function stateOf(config: CliConfig, path: string, what: string, runId: string) {
  try {
    return await callProject<IndexedRun>(config, "GET", path, what);
  } catch (err) {
    if (notIndexedYet(err, runId)) return undefined;
    throw err;
  }
}
