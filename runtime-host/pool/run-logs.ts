/**
 * The logs of runs: what each run of a managed app wrote while it ran (`ctx.log`, `console.*`,
 * `process.stdout` / `process.stderr`), as lines with their stream and time. Kept by the host,
 * outside any replica, so a run's log outlives the process that ran it; bounded per run, in the
 * number of runs and in bytes on disk (`RUN_LOG_LIMITS`). The host's store (`RunLogStore.open`)
 * also writes each whole line to the run's file (run-log-files.ts), so the logs outlive the host
 * too: after a restart a run's file is read back the first time its log is asked for.
 */
import type { RunLogs } from "../../common/protocol/host.ts";
import { RUN_LOG_LIMITS } from "../limits.ts";
import type { LogStream } from "./log-ring.ts";
import { type Line, RunLog, type RunLogLimits, type RunOwner } from "./run-log.ts";
import { fileKeyOf, headerOf, parseRunLog, RunLogFiles, recordOf } from "./run-log-files.ts";

export type { RunLogLimits, RunOwner };

/** A run whose file is on disk, from before the host started, not read yet. */
interface Unread {
  fileBytes: number;
}

export class RunLogStore {
  /**
   * By file key (fileKeyOf), in the order the runs were opened, those found on disk at the start
   * first (the oldest written first): the first is the one dropped next.
   */
  readonly #runs = new Map<string, RunLog | Unread>();
  /** The bytes of every run's file, written or queued. */
  #diskBytes = 0;

  /** Without `files`, in memory only (tests' stores). */
  constructor(
    readonly limits: RunLogLimits = RUN_LOG_LIMITS,
    private readonly files?: RunLogFiles,
  ) {}

  /**
   * The store of the runs' files in `dir` (made if missing): those a host wrote before it
   * restarted are known at once, and read when asked for. A file cut short or damaged is read up
   * to its last good line, never refused; past the limits the oldest files are removed.
   */
  static async open(dir: string, limits: RunLogLimits = RUN_LOG_LIMITS): Promise<RunLogStore> {
    const files = new RunLogFiles(dir);
    const store = new RunLogStore(limits, files);
    for (const { key, bytes } of await files.scan()) store.#add(key, { fileBytes: bytes });
    store.#keepWithinDisk();
    return store;
  }

  /**
   * Starts keeping the log of `runId`. A run opened again (the same id called once more) keeps
   * its lines and counts as the newest (one from before a restart is read back from its file).
   */
  open(runId: string, owner: RunOwner): void {
    const key = fileKeyOf(runId);
    const found = this.#runs.get(key);
    const existing =
      found instanceof RunLog
        ? found
        : found && this.#fromFile(key, found, this.files?.readNow(key));
    if (existing) {
      this.#runs.delete(key);
      this.#runs.set(key, existing);
      return;
    }
    const log = new RunLog(runId, owner, this.limits, this.#onLine);
    this.#add(key, this.#newLog(key, log, 0));
  }

  has(runId: string): boolean {
    return this.#runs.has(fileKeyOf(runId));
  }

  /** Adds what the run wrote to one stream; false (and nothing kept) for a run not opened. */
  write(runId: string, stream: LogStream, text: string, at: number = Date.now()): boolean {
    const log = this.#log(runId);
    log?.write(stream, text, at);
    return log !== undefined;
  }

  /** Ends the unfinished last line of each stream (the run is over, or its process is gone). */
  flush(runId: string): void {
    this.#log(runId)?.flush();
  }

  /**
   * The run's log, unfinished lines included; undefined if none is kept. Each whole line has its
   * `seq`, its number in all the run wrote (1 for the first, dropped ones counted), so a reader
   * that polls asks for those `after` the last it had; an unfinished line has none (it comes
   * again, longer, once it ends), and comes every time. A run whose file is not read yet (one
   * from before a restart) is not there: `read` reads it.
   */
  get(runId: string, after = 0): (RunLogs & RunOwner) | undefined {
    return this.#log(runId)?.view(after);
  }

  /** `get`, reading the run's file first if it is not read yet. */
  async read(runId: string, after = 0): Promise<(RunLogs & RunOwner) | undefined> {
    const key = fileKeyOf(runId);
    const found = this.#runs.get(key);
    if (found && !(found instanceof RunLog) && this.files) {
      const text = await this.files.read(key);
      // Opened again, or dropped, meanwhile: as it is now.
      if (this.#runs.get(key) === found) this.#fromFile(key, found, text);
    }
    return this.get(runId, after);
  }

  /** Writes what is waiting for the disk, and waits for it (the host stops). */
  async close(): Promise<void> {
    await this.files?.close();
  }

  #log(runId: string): RunLog | undefined {
    const log = this.#runs.get(fileKeyOf(runId));
    return log instanceof RunLog ? log : undefined;
  }

  #add(key: string, run: RunLog | Unread): void {
    for (const oldest of this.#runs.keys()) {
      if (this.#runs.size < this.limits.runs) break;
      this.#drop(oldest);
    }
    this.#runs.set(key, run);
    this.#diskBytes += run.fileBytes;
  }

  #drop(key: string): void {
    const run = this.#runs.get(key);
    this.#runs.delete(key);
    if (!run?.fileBytes) return;
    this.#diskBytes -= run.fileBytes;
    this.files?.remove(key);
  }

  /** Drops the oldest runs while their files are over their bytes (the newest always stays). */
  #keepWithinDisk(): void {
    const most = this.limits.diskBytes ?? RUN_LOG_LIMITS.diskBytes;
    for (const oldest of this.#runs.keys()) {
      if (this.#diskBytes <= most || this.#runs.size <= 1) break;
      this.#drop(oldest);
    }
  }

  /** The log of a run's file, in the run's place; the run dropped if its file holds none. */
  #fromFile(key: string, unread: Unread, text: string | undefined): RunLog | undefined {
    const stored = text === undefined ? undefined : parseRunLog(text);
    if (!stored || fileKeyOf(stored.runId) !== key) {
      this.#drop(key);
      return undefined;
    }
    const read = RunLog.fromStored(stored, this.limits, this.#onLine);
    const log = this.#newLog(key, read, unread.fileBytes);
    this.#runs.set(key, log); // in its place
    // What came after a line cut short would be lost: its file keeps only what was read.
    if (stored.damaged) this.#rewrite(key, log);
    return log;
  }

  #newLog(key: string, log: RunLog, fileBytes: number): RunLog {
    log.key = key;
    log.fileBytes = fileBytes;
    log.rewriteAt = this.#rewriteAt(fileBytes);
    return log;
  }

  /** A file is rewritten once it doubles what was last written whole, and past 4 runs' caps. */
  #rewriteAt(written: number): number {
    return Math.max(4 * this.limits.bytesPerRun, 2 * written);
  }

  /** A run's newest whole line to its file: appended with the next batch, or the file rewritten. */
  readonly #onLine = (log: RunLog, line: Line): void => {
    const { key } = log;
    if (!this.files || this.#runs.get(key) !== log) return;
    let data = recordOf(line, log.total, log.truncated);
    if (log.fileBytes === 0) data = headerOf(log.runId, log.owner) + data;
    const bytes = Buffer.byteLength(data);
    if (log.fileBytes + bytes > log.rewriteAt) {
      this.#rewrite(key, log);
    } else {
      this.files.append(key, data);
      log.fileBytes += bytes;
      this.#diskBytes += bytes;
    }
    this.#keepWithinDisk();
  };

  /** The run's file written again with only the lines the run keeps. */
  #rewrite(key: string, log: RunLog): void {
    if (!this.files) return;
    const first = log.total - log.lines.length + 1;
    const records = log.lines.map((line, i) => recordOf(line, first + i, log.truncated));
    const content = headerOf(log.runId, log.owner) + records.join("");
    const bytes = Buffer.byteLength(content);
    this.files.rewrite(key, content);
    this.#diskBytes += bytes - log.fileBytes;
    log.fileBytes = bytes;
    log.rewriteAt = this.#rewriteAt(bytes);
  }
}

/**
 * A store in memory only, for replicas made without one (tests'); a host hands its replicas its
 * own (`RunLogStore.open` on its home), which `GET /internal/runs/{runId}/logs` reads.
 */
export const hostRunLogs = new RunLogStore();
