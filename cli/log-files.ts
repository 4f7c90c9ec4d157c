/**
 * The log files of `runlet start` (`RUNLET_HOME/logs/`), rotated by size so a stack left running
 * for months does not fill its disk: once `name.log` would pass `maxBytes`, it becomes
 * `name.log.1` (`.1` becomes `.2`, …, up to `keep`; the oldest is dropped) and a new `name.log`
 * begins. At most `(keep + 1) × maxBytes` per log, give or take a line.
 *
 * - No line is lost: a rotation renames the file under the stream still writing it, so what that
 *   stream has not yet written lands in `name.log.1`, in order; the next write opens the new file.
 * - Lines stay whole: a chunk that would pass the limit is cut after the last newline that fits;
 *   a line the file already began is ended there, so a file passes `maxBytes` only by the rest
 *   of such a line (or by a line longer than `maxBytes`, which has a file to itself).
 * - Nothing waits on the disk: writes are buffered by the stream, the renames are a few
 *   `rename(2)` calls, and the components write to pipes this process reads as before.
 * - Each line begins with when it came, in UTC (`2026-11-26T21:04:05.123Z `, as
 *   `docker logs --timestamps` and journald give it): the time its first byte reached this
 *   process. A line that comes in pieces (a pipe's chunk ends anywhere) has one stamp; a chunk
 *   of many lines stamps each.
 */
import {
  closeSync,
  createWriteStream,
  openSync,
  readSync,
  renameSync,
  statSync,
  type WriteStream,
} from "node:fs";
import { ENV } from "../common/consts.ts";
import { wholeNumberSetting } from "./start-settings.ts";

export interface LogLimits {
  /** The size at which a log is rotated. */
  maxBytes: number;
  /** How many rotated files are kept beside it (`.1` … `.keep`). */
  keep: number;
}

export const DEFAULT_LOG_LIMITS: LogLimits = { maxBytes: 10 * 1024 * 1024, keep: 3 };

/** The limits `runlet start` uses: RUNLET_LOG_MAX_BYTES, RUNLET_LOG_KEEP, else the defaults. */
export function logLimitsFrom(env: NodeJS.ProcessEnv): LogLimits | string {
  const maxBytes = wholeNumberSetting(env, ENV.logMaxBytes, DEFAULT_LOG_LIMITS.maxBytes, 1024);
  const keep = wholeNumberSetting(env, ENV.logKeep, DEFAULT_LOG_LIMITS.keep, 1);
  if (typeof maxBytes === "string") return maxBytes;
  if (typeof keep === "string") return keep;
  return { maxBytes, keep };
}

/** `path` → `path.1` → … → `path.keep` (the oldest dropped); a file missing on the way is skipped. */
export function shiftLogs(path: string, keep: number): void {
  for (let n = keep; n >= 1; n--) {
    try {
      renameSync(n === 1 ? path : `${path}.${n - 1}`, `${path}.${n}`);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
    }
  }
}

/**
 * Rotates `path` if it has reached the limit: for a log another program appends to by name
 * (wrangler's, which opens it for each entry, so its next entry begins the new file).
 */
export function rotateIfOver(path: string, limits: LogLimits): boolean {
  try {
    if (statSync(path).size < limits.maxBytes) return false;
    shiftLogs(path, limits.keep);
    return true;
  } catch {
    return false; // gone, or not ours to rename: tried again at the next look
  }
}

/** Looks at `path` every `everyMs` and rotates it once over the limit; gives back the stop. */
export function watchLogSize(path: string, limits: LogLimits, everyMs = 60_000): () => void {
  const timer = setInterval(() => rotateIfOver(path, limits), everyMs);
  timer.unref();
  return () => clearInterval(timer);
}

const sizeOf = (path: string) => {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
};

/** Whether the file at `path` (of `size` bytes) ends in a line not ended (a writer that died). */
function endsMidLine(path: string, size: number): boolean {
  if (size === 0) return false;
  try {
    const fd = openSync(path, "r");
    try {
      const last = Buffer.alloc(1);
      readSync(fd, last, 0, 1, size - 1);
      return last[0] !== 10;
    } finally {
      closeSync(fd);
    }
  } catch {
    return false;
  }
}

const NEWLINE = Buffer.from("\n");

/** `data` with the time now before each line that begins in it (`midLine`: its first does not). */
export function stamped(data: Buffer, midLine: boolean, now = new Date()): Buffer {
  const stamp = Buffer.from(`${now.toISOString()} `);
  const parts: Buffer[] = [];
  let start = 0;
  let lineStart = !midLine;
  while (start < data.length) {
    if (lineStart) parts.push(stamp);
    const newline = data.indexOf(10, start);
    const end = newline === -1 ? data.length : newline + 1;
    parts.push(data.subarray(start, end));
    start = end;
    lineStart = newline !== -1;
  }
  return Buffer.concat(parts);
}

/** A log file this process writes, appended to and rotated by size. */
export class LogFile {
  #stream: WriteStream;
  #size: number;
  #ended = false;
  #unwritable = false;
  /** Whether the file ends in a line not yet ended (a chunk of a pipe ends anywhere). */
  #midLine = false;
  /** The stream whose line the file ends in, while `#midLine` (see `write`). */
  #lineOf = "";
  /** The file ended in a line an earlier writer left unended: what comes now begins another. */
  #brokenLine = false;

  constructor(
    readonly path: string,
    private readonly limits: LogLimits = DEFAULT_LOG_LIMITS,
  ) {
    this.#size = sizeOf(path);
    this.#brokenLine = endsMidLine(path, this.#size);
    this.#stream = this.#open();
  }

  get ended(): boolean {
    return this.#ended;
  }

  /**
   * Opened here and now, not when the stream gets to it: a rotation in between would rename
   * the file before the stream opens its path, which would then be the new file's.
   */
  #open(): WriteStream {
    let fd: number | undefined;
    try {
      fd = openSync(this.path, "a");
    } catch (err) {
      this.#cannot(err as Error);
    }
    const stream =
      fd === undefined ? createWriteStream("/dev/null") : createWriteStream("", { fd });
    stream.on("error", (err) => this.#cannot(err));
    return stream;
  }

  /**
   * A log that cannot be written (the disk full) must not end `runlet start`, and with it every
   * component: said once, and the output dropped.
   */
  #cannot(err: Error): void {
    if (this.#unwritable) return;
    this.#unwritable = true;
    console.error(`runlet: cannot write ${this.path} (${err.message}); its output is dropped`);
  }

  /**
   * Output as it comes (a line may arrive in pieces), each line stamped with its time. `from`
   * names the stream it came from (stdout, stderr): another stream's line left unended is ended
   * first, so the two do not share a line (the rest of it comes as a line of its own).
   */
  write(chunk: Buffer | string, from = ""): void {
    if (this.#ended || this.#unwritable) return;
    const data = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
    if (data.length === 0) return;
    const cut = this.#midLine && this.#lineOf !== from;
    const lines = stamped(data, this.#midLine && !cut);
    this.#write(cut ? Buffer.concat([NEWLINE, lines]) : lines);
    this.#lineOf = from;
  }

  /** A whole line of this process's own (the supervisor's), on a line of its own. */
  writeLine(text: string): void {
    this.write(`${text}\n`, "runlet");
  }

  #write(stampedData: Buffer): void {
    let data = this.#brokenLine ? Buffer.concat([NEWLINE, stampedData]) : stampedData;
    this.#brokenLine = false;
    while (this.#size + data.length > this.limits.maxBytes) {
      // The whole lines that fit; or, in a line the file ends in, that line's end.
      const room = this.limits.maxBytes - this.#size;
      let cut = room > 0 ? data.lastIndexOf(10, room - 1) + 1 : 0;
      if (cut === 0 && this.#midLine) cut = data.indexOf(10) + 1 || data.length;
      if (cut === 0 && this.#size === 0) break; // a line longer than a file: it goes whole
      this.#put(data.subarray(0, cut));
      data = data.subarray(cut);
      if (this.#midLine) break; // it had no newline: all of it went to this file
      this.#rotate();
    }
    this.#put(data);
  }

  #put(data: Buffer): void {
    if (data.length === 0) return;
    this.#stream.write(data);
    this.#size += data.length;
    this.#midLine = data[data.length - 1] !== 10;
  }

  #rotate(): void {
    try {
      shiftLogs(this.path, this.limits.keep);
    } catch (err) {
      // Kept writing where it is; tried again once another maxBytes is written.
      console.error(`runlet: cannot rotate ${this.path} (${(err as Error).message})`);
      this.#size = 0;
      return;
    }
    this.#stream.end(); // what it holds still goes to the renamed file
    this.#stream = this.#open();
    this.#size = 0;
  }

  /** Resolves once everything written so far is in the file. */
  flush(): Promise<void> {
    if (this.#ended || this.#unwritable) return Promise.resolve();
    return new Promise((resolve) => this.#stream.write("", () => resolve()));
  }

  /** Writes what is left and closes the file; once. */
  end(): Promise<void> {
    if (this.#ended) return Promise.resolve();
    this.#ended = true;
    return new Promise((resolve) => this.#stream.end(resolve));
  }
}
