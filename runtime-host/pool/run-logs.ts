/**
 * The logs of runs: what each run of a managed app wrote while it ran (`ctx.log`, `console.*`,
 * `process.stdout` / `process.stderr`), as lines with their stream and time. Kept by the host,
 * outside any replica, so a run's log outlives the process that ran it; bounded per run and in
 * the number of runs (`RUN_LOG_LIMITS`).
 */
import type { RunLogs } from "../../common/protocol/host.ts";
import { RUN_LOG_LIMITS } from "../limits.ts";
import type { LogStream } from "./log-ring.ts";

export interface RunLogLimits {
  /** Bytes of text kept per run, counting one for each line's newline; the newest are kept. */
  bytesPerRun: number;
  /** Lines kept per run, the newest (RUN_LOG_LIMITS' when not given). */
  linesPerRun?: number;
  /** Runs whose logs are kept; opening one more drops the oldest run's log. */
  runs: number;
}

/** Whose run it is: the host's project id and app name. */
export interface RunOwner {
  project: string;
  app: string;
}

interface Line {
  at: number;
  stream: LogStream;
  text: string;
}

interface Entry extends RunOwner {
  lines: Line[];
  /** Whole lines ever kept, those dropped since included: the newest one's `seq`. */
  total: number;
  /** Bytes held in `lines`, newlines included. */
  bytes: number;
  truncated: boolean;
  /** Text written after the last newline of each stream, waiting for the rest of its line. */
  partial: Record<LogStream, { at: number; text: string } | undefined>;
}

const lineBytes = (text: string) => Buffer.byteLength(text) + 1;

export class RunLogStore {
  /** In the order the runs were opened: the first is the one evicted next. */
  readonly #runs = new Map<string, Entry>();

  constructor(readonly limits: RunLogLimits = RUN_LOG_LIMITS) {}

  /**
   * Starts keeping the log of `runId`. A run opened again (the same id called once more) keeps
   * its lines and counts as the newest.
   */
  open(runId: string, owner: RunOwner): void {
    const existing = this.#runs.get(runId);
    if (existing) {
      this.#runs.delete(runId);
      this.#runs.set(runId, existing);
      return;
    }
    for (const oldest of this.#runs.keys()) {
      if (this.#runs.size < this.limits.runs) break;
      this.#runs.delete(oldest);
    }
    this.#runs.set(runId, {
      ...owner,
      lines: [],
      total: 0,
      bytes: 0,
      truncated: false,
      partial: { stdout: undefined, stderr: undefined },
    });
  }

  has(runId: string): boolean {
    return this.#runs.has(runId);
  }

  /** Adds what the run wrote to one stream; false (and nothing kept) for a run not opened. */
  write(runId: string, stream: LogStream, text: string, at: number = Date.now()): boolean {
    const entry = this.#runs.get(runId);
    if (!entry) return false;
    const cap = this.limits.bytesPerRun;
    let chunk = text;
    // Only the newest `cap` bytes can stay; a character is at least one byte.
    if (chunk.length > cap) {
      chunk = chunk.slice(chunk.length - cap);
      entry.partial[stream] = undefined;
      entry.truncated = true;
    }
    let start = 0;
    for (let nl = chunk.indexOf("\n"); nl !== -1; nl = chunk.indexOf("\n", start)) {
      const partial = entry.partial[stream];
      entry.partial[stream] = undefined;
      this.#push(entry, {
        at: partial?.at ?? at,
        stream,
        text: (partial?.text ?? "") + chunk.slice(start, nl),
      });
      start = nl + 1;
    }
    if (start < chunk.length) {
      const partial = entry.partial[stream];
      const pending = { at: partial?.at ?? at, text: (partial?.text ?? "") + chunk.slice(start) };
      entry.partial[stream] = pending;
      // A line that never ends is cut into pieces of the limit's size.
      if (lineBytes(pending.text) > cap) this.#flushStream(entry, stream);
    }
    return true;
  }

  /** Ends the unfinished last line of each stream (the run is over, or its process is gone). */
  flush(runId: string): void {
    const entry = this.#runs.get(runId);
    if (!entry) return;
    this.#flushStream(entry, "stdout");
    this.#flushStream(entry, "stderr");
  }

  /**
   * The run's log, unfinished lines included; undefined if none is kept. Each whole line has its
   * `seq`, its number in all the run wrote (1 for the first, dropped ones counted), so a reader
   * that polls asks for those `after` the last it had; an unfinished line has none (it comes
   * again, longer, once it ends), and comes every time.
   */
  get(runId: string, after = 0): (RunLogs & RunOwner) | undefined {
    const entry = this.#runs.get(runId);
    if (!entry) return undefined;
    const first = entry.total - entry.lines.length + 1;
    const whole = entry.lines.slice(Math.max(0, after - first + 1)).map((line, i, kept) => ({
      ...line,
      seq: entry.total - kept.length + i + 1,
    }));
    const partials = (["stdout", "stderr"] as const)
      .flatMap((stream) => {
        const partial = entry.partial[stream];
        return partial ? [{ ...partial, stream }] : [];
      })
      .sort((a, b) => a.at - b.at);
    const lines: Array<Line & { seq?: number }> = [...whole, ...partials];
    return {
      runId,
      project: entry.project,
      app: entry.app,
      lines: lines.map(({ at, stream, text, seq }) => ({
        time: new Date(at).toISOString(),
        stream,
        text,
        ...(seq === undefined ? {} : { seq }),
      })),
      truncated: entry.truncated,
    };
  }

  #flushStream(entry: Entry, stream: LogStream): void {
    const partial = entry.partial[stream];
    if (!partial) return;
    entry.partial[stream] = undefined;
    this.#push(entry, { ...partial, stream });
  }

  #push(entry: Entry, line: Line): void {
    const cap = this.limits.bytesPerRun;
    let text = line.text.endsWith("\r") ? line.text.slice(0, -1) : line.text;
    if (lineBytes(text) > cap) {
      const bytes = Buffer.from(text);
      text = bytes.subarray(bytes.length - (cap - 1)).toString("utf8");
      // A character cut in two decodes as U+FFFD, which may be longer than its remaining bytes.
      while (lineBytes(text) > cap) text = text.slice(1);
      entry.truncated = true;
    }
    entry.lines.push({ ...line, text });
    entry.total++;
    entry.bytes += lineBytes(text);
    const most = this.limits.linesPerRun ?? RUN_LOG_LIMITS.linesPerRun;
    while (entry.bytes > cap || entry.lines.length > most) {
      const oldest = entry.lines.shift();
      if (!oldest) break;
      entry.bytes -= lineBytes(oldest.text);
      entry.truncated = true;
    }
  }
}

/**
 * The host's store: replicas write to it and `GET /internal/runs/{runId}/logs` reads it, unless
 * they are handed another (tests do).
 */
export const hostRunLogs = new RunLogStore();
