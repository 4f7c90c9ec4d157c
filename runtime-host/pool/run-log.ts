/**
 * One run's log (`RunLogStore`'s): what it wrote cut into lines per stream, the newest within
 * its limits, each whole line numbered and handed to `onLine` (its file) as it is kept.
 */
import type { RunLogs } from "../../common/protocol/host.ts";
import { RUN_LOG_LIMITS } from "../limits.ts";
import type { LogStream } from "./log-ring.ts";
import type { StoredLog } from "./run-log-files.ts";

export interface RunLogLimits {
  /** Bytes of text kept per run, counting one for each line's newline; the newest are kept. */
  bytesPerRun: number;
  /** Lines kept per run, the newest (RUN_LOG_LIMITS' when not given). */
  linesPerRun?: number;
  /** Runs whose logs are kept; opening one more drops the oldest run's log. */
  runs: number;
  /** Bytes of the runs' files on disk (RUN_LOG_LIMITS' when not given); the oldest runs go first. */
  diskBytes?: number;
}

/** Whose run it is: the host's project id and app name. */
export interface RunOwner {
  project: string;
  app: string;
}

export interface Line {
  at: number;
  stream: LogStream;
  text: string;
}

export const lineBytes = (text: string) => Buffer.byteLength(text) + 1;

/** The newlines in `text` before index `end`. */
function newlinesIn(text: string, end: number): number {
  let n = 0;
  for (let i = text.indexOf("\n"); i !== -1 && i < end; i = text.indexOf("\n", i + 1)) n++;
  return n;
}

export class RunLog {
  readonly lines: Line[] = [];
  /** Whole lines ever kept, those dropped since included: the newest one's `seq`. */
  total = 0;
  /** Bytes held in `lines`, newlines included. */
  bytes = 0;
  truncated = false;
  /** Text written after the last newline of each stream, waiting for the rest of its line. */
  readonly #partial: Record<LogStream, { at: number; text: string } | undefined> = {
    stdout: undefined,
    stderr: undefined,
  };
  /** Its file's name (fileKeyOf), set by its store. */
  key = "";
  /** Bytes of its file, written or queued: 0 until its first whole line (the store's count). */
  fileBytes = 0;
  /** Its file is rewritten with only what the run keeps once it would pass this size. */
  rewriteAt = 0;

  constructor(
    readonly runId: string,
    readonly owner: RunOwner,
    private readonly limits: RunLogLimits,
    /** Each whole line once kept, its `seq` being `total`. */
    private readonly onLine: (log: RunLog, line: Line) => void = () => {},
  ) {}

  /** A log read back from its file, its newest lines within `limits`. */
  static fromStored(
    stored: StoredLog,
    limits: RunLogLimits,
    onLine: (log: RunLog, line: Line) => void,
  ): RunLog {
    const owner = { project: stored.project, app: stored.app };
    const log = new RunLog(stored.runId, owner, limits, onLine);
    const cap = limits.bytesPerRun;
    const most = limits.linesPerRun ?? RUN_LOG_LIMITS.linesPerRun;
    const lines = stored.lines;
    let bytes = lines.reduce((sum, line) => sum + lineBytes(line.text), 0);
    let start = 0;
    while (start < lines.length && (bytes > cap || lines.length - start > most)) {
      bytes -= lineBytes(lines[start]?.text ?? "");
      start++;
    }
    const kept = lines.slice(start);
    log.lines.push(...kept.map(({ at, stream, text }) => ({ at, stream, text })));
    log.total = lines.at(-1)?.seq ?? 0;
    log.bytes = bytes;
    log.truncated = (kept[0]?.seq ?? 1) > 1 || lines.some((l) => l.truncated);
    return log;
  }

  /** Adds what the run wrote to one stream. */
  write(stream: LogStream, text: string, at: number): void {
    const cap = this.limits.bytesPerRun;
    let chunk = text;
    // Only the newest `cap` bytes can stay; a character is at least one byte.
    if (chunk.length > cap) {
      const cut = chunk.length - cap;
      chunk = chunk.slice(cut);
      this.#partial[stream] = undefined;
      this.truncated = true;
      this.#skip(newlinesIn(text, cut));
    }
    let start = 0;
    for (let nl = chunk.indexOf("\n"); nl !== -1; nl = chunk.indexOf("\n", start)) {
      const partial = this.#partial[stream];
      this.#partial[stream] = undefined;
      this.#push({
        at: partial?.at ?? at,
        stream,
        text: (partial?.text ?? "") + chunk.slice(start, nl),
      });
      start = nl + 1;
    }
    if (start < chunk.length) {
      const partial = this.#partial[stream];
      const pending = { at: partial?.at ?? at, text: (partial?.text ?? "") + chunk.slice(start) };
      this.#partial[stream] = pending;
      // A line that never ends is cut into pieces of the limit's size.
      if (lineBytes(pending.text) > cap) this.#flushStream(stream);
    }
  }

  /** Ends the unfinished last line of each stream (the run is over, or its process is gone). */
  flush(): void {
    this.#flushStream("stdout");
    this.#flushStream("stderr");
  }

  /** The log's lines past `after` and its unfinished ones (see `RunLogStore.get`). */
  view(after: number): RunLogs & RunOwner {
    const first = this.total - this.lines.length + 1;
    const whole = this.lines.slice(Math.max(0, after - first + 1)).map((line, i, kept) => ({
      ...line,
      seq: this.total - kept.length + i + 1,
    }));
    const partials = (["stdout", "stderr"] as const)
      .flatMap((stream) => {
        const partial = this.#partial[stream];
        return partial ? [{ ...partial, stream }] : [];
      })
      .sort((a, b) => a.at - b.at);
    const lines: Array<Line & { seq?: number }> = [...whole, ...partials];
    return {
      runId: this.runId,
      project: this.owner.project,
      app: this.owner.app,
      lines: lines.map(({ at, stream, text, seq }) => ({
        time: new Date(at).toISOString(),
        stream,
        text,
        ...(seq === undefined ? {} : { seq }),
      })),
      truncated: this.truncated,
    };
  }

  /**
   * Counts `n` lines dropped before they were kept (a single write over the bound), so `seq`
   * has a gap there, as for lines dropped once kept. The lines kept are older than those: they
   * go too, so those kept stay numbered one after another; the run's file is rewritten with the
   * next line (its lines read back must be too).
   */
  #skip(n: number): void {
    if (n === 0) return;
    this.total += n;
    this.lines.length = 0;
    this.bytes = 0;
    this.rewriteAt = 0;
  }

  #flushStream(stream: LogStream): void {
    const partial = this.#partial[stream];
    if (!partial) return;
    this.#partial[stream] = undefined;
    this.#push({ ...partial, stream });
  }

  #push(line: Line): void {
    const cap = this.limits.bytesPerRun;
    let text = line.text.endsWith("\r") ? line.text.slice(0, -1) : line.text;
    if (lineBytes(text) > cap) {
      const bytes = Buffer.from(text);
      text = bytes.subarray(bytes.length - (cap - 1)).toString("utf8");
      // A character cut in two decodes as U+FFFD, which may be longer than its remaining bytes.
      while (lineBytes(text) > cap) text = text.slice(1);
      this.truncated = true;
    }
    const kept = { ...line, text };
    this.lines.push(kept);
    this.total++;
    this.bytes += lineBytes(text);
    const most = this.limits.linesPerRun ?? RUN_LOG_LIMITS.linesPerRun;
    while (this.bytes > cap || this.lines.length > most) {
      const oldest = this.lines.shift();
      if (!oldest) break;
      this.bytes -= lineBytes(oldest.text);
      this.truncated = true;
    }
    this.onLine(this, kept);
  }
}
