/**
 * The logs of runs on the host's disk (`RunLogStore`'s files), so they outlive a restart of the
 * host: one file per run, `{dir}/{runId}.jsonl` (a run id of other characters is named by its
 * SHA-256), made at its first whole line. Its first line is `{runId, project, app}`, each next
 * one a line of the run: `{n, at, s, t, x?}` (its `seq`, its time, `o` stdout or `e` stderr, its
 * text, `x: 1` once the run's log was truncated). Lines are appended in batches, every
 * `FLUSH_MS` at most, one write per run; a file is rewritten whole (a temp file, then a rename)
 * when it outgrows what its run keeps. A file cut short by a kill, or damaged, is read up to its
 * last good line. The folder is its owner's only (0700, files 0600): a run's output is its
 * project's.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import {
  appendFile,
  mkdir,
  readdir,
  readFile,
  rename,
  rm,
  stat,
  writeFile,
} from "node:fs/promises";
import { join } from "node:path";
import type { LogStream } from "./log-ring.ts";

/**
 * Longest a whole line waits in memory before its file gets it: what a host killed outright
 * (SIGKILL, a crash) loses of its runs' logs. One write per run writing, at most every 100 ms.
 */
export const FLUSH_MS = 100;

const SUFFIX = ".jsonl";

/** The name of a run's file, without `.jsonl`: the run id itself, unless it has other characters. */
export function fileKeyOf(runId: string): string {
  return /^[A-Za-z0-9_-]{1,128}$/.test(runId)
    ? runId
    : `~${createHash("sha256").update(runId).digest("hex")}`;
}

export interface StoredLine {
  at: number;
  stream: LogStream;
  text: string;
  seq: number;
  /** The run's log had been truncated when this line was written. */
  truncated: boolean;
}

export interface StoredLog {
  runId: string;
  project: string;
  app: string;
  lines: StoredLine[];
  /** Whether anything after the header was cut short or unreadable (and left out). */
  damaged: boolean;
}

export const headerOf = (runId: string, owner: { project: string; app: string }) =>
  `${JSON.stringify({ runId, project: owner.project, app: owner.app })}\n`;

/** A line's record, written out by hand: no object made per line, only its text escaped. */
export const recordOf = (
  line: { at: number; stream: LogStream; text: string },
  seq: number,
  truncated: boolean,
) =>
  `{"n":${seq},"at":${line.at},"s":"${line.stream === "stderr" ? "e" : "o"}","t":${JSON.stringify(line.text)}${truncated ? ',"x":1' : ""}}\n`;

const parse = (text: string): Record<string, unknown> | undefined => {
  try {
    const value: unknown = JSON.parse(text);
    return value && typeof value === "object" ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
};

/**
 * A run's file read back: undefined if even its header is not whole. Its lines end at the first
 * one that is not whole, not well formed, or not numbered one after the one before.
 */
export function parseRunLog(text: string): StoredLog | undefined {
  const pieces = text.split("\n");
  // What follows the last newline is a line cut short (or nothing).
  const whole = pieces.slice(0, -1);
  const header = parse(whole[0] ?? "");
  const { runId, project, app } = header ?? {};
  if (typeof runId !== "string" || typeof project !== "string" || typeof app !== "string")
    return undefined;
  const lines: StoredLine[] = [];
  let damaged = (pieces.at(-1) ?? "") !== "";
  for (const raw of whole.slice(1)) {
    const r = parse(raw);
    const previous = lines.at(-1);
    if (
      !r ||
      typeof r.n !== "number" ||
      !Number.isSafeInteger(r.n) ||
      r.n < 1 ||
      (previous && r.n !== previous.seq + 1) ||
      typeof r.at !== "number" ||
      !(Math.abs(r.at) <= 8.64e15) || // a time Date can hold
      (r.s !== "o" && r.s !== "e") ||
      typeof r.t !== "string"
    ) {
      damaged = true;
      break;
    }
    const stream = r.s === "e" ? "stderr" : "stdout";
    lines.push({ at: r.at, stream, text: r.t, seq: r.n, truncated: r.x === 1 });
  }
  return { runId, project, app, lines, damaged };
}

/** The files of one store's folder, and the writes queued to them, one at a time in order. */
export class RunLogFiles {
  /** What each run's file is yet to get, by file key, in the order it was written. */
  readonly #pending = new Map<string, string[]>();
  #queue: Promise<void> = Promise.resolve();
  #timer: NodeJS.Timeout | undefined;
  #failed = false;

  constructor(readonly dir: string) {}

  /**
   * Makes the folder and lists the runs' files in it, oldest written first, with their sizes.
   * What is not a run's file (a temp file of a rewrite a kill interrupted) is removed.
   */
  async scan(): Promise<Array<{ key: string; bytes: number }>> {
    let names: string[];
    try {
      await mkdir(this.dir, { recursive: true, mode: 0o700 });
      names = await readdir(this.dir);
    } catch (err) {
      // The host starts all the same: its runs' logs are then in its memory only.
      this.#said(err as NodeJS.ErrnoException);
      return [];
    }
    const found: Array<{ key: string; bytes: number; mtimeMs: number }> = [];
    for (const name of names) {
      const path = join(this.dir, name);
      const info = await stat(path).catch(() => undefined);
      if (!info) continue;
      if (name.endsWith(SUFFIX) && info.isFile() && info.size > 0)
        found.push({ key: name.slice(0, -SUFFIX.length), bytes: info.size, mtimeMs: info.mtimeMs });
      else await rm(path, { recursive: true, force: true }).catch(() => {});
    }
    return found.sort((a, b) => a.mtimeMs - b.mtimeMs).map(({ key, bytes }) => ({ key, bytes }));
  }

  #path(key: string): string {
    return join(this.dir, key + SUFFIX);
  }

  /** The run's file as it is on disk; undefined if it cannot be read. */
  read(key: string): Promise<string | undefined> {
    // After the writes queued before this read: a run reopened meanwhile is not half read.
    const text = this.#queue.then(() => readFile(this.#path(key), "utf8"));
    return text.catch(() => undefined);
  }

  /** The same, at once: a small file (a run's, bounded), for a run opened again after a restart. */
  readNow(key: string): string | undefined {
    try {
      return readFileSync(this.#path(key), "utf8");
    } catch {
      return undefined;
    }
  }

  /** Adds `data` to the run's file with the next batch. */
  append(key: string, data: string): void {
    const pending = this.#pending.get(key);
    if (pending) pending.push(data);
    else this.#pending.set(key, [data]);
    this.#timer ??= setTimeout(() => {
      this.#timer = undefined;
      this.#writePending();
    }, FLUSH_MS).unref();
  }

  /** Replaces the run's file with `content` (what was pending for it is in it). */
  rewrite(key: string, content: string): void {
    this.#pending.delete(key);
    const path = this.#path(key);
    const temp = `${path}.${process.pid}.tmp`;
    this.#enqueue(async () => {
      await writeFile(temp, content, { mode: 0o600 });
      await rename(temp, path);
    });
  }

  remove(key: string): void {
    this.#pending.delete(key);
    this.#enqueue(() => rm(this.#path(key), { force: true }));
  }

  /** Writes what is pending now and waits for every write queued. */
  async close(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#writePending();
    await this.#queue;
  }

  #writePending(): void {
    const batch = [...this.#pending];
    this.#pending.clear();
    if (batch.length === 0) return;
    this.#enqueue(async () => {
      let failure: unknown;
      for (const [key, data] of batch)
        await appendFile(this.#path(key), data.join(""), { mode: 0o600 }).catch((err: unknown) => {
          failure ??= err;
        });
      if (failure) throw failure;
    });
  }

  #enqueue(write: () => Promise<unknown>): void {
    this.#queue = this.#queue.then(write).then(
      () => {
        this.#failed = false;
      },
      (err: NodeJS.ErrnoException) => this.#said(err),
    );
  }

  /** Said once until writes succeed again: the logs stay in memory meanwhile. */
  #said(err: NodeJS.ErrnoException): void {
    if (!this.#failed)
      console.error(
        `runtime host: cannot write the logs of runs to ${this.dir} (${err.code ?? err.message}); they are kept in memory only, and lost at a restart`,
      );
    this.#failed = true;
  }
}
