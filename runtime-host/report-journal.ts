/**
 * The host's run reports on disk until the runs index has them. A synchronous run's caller has
 * its answer before the report's batch leaves (run-reports.ts gathers for 25 ms), so a host
 * killed in that moment lost the run from `runlet runs` and the dashboard. Each report is now
 * appended to a file before it is queued (one write, no `fsync`: a killed process loses nothing
 * the kernel has; a machine losing power may lose the last moment's), and the file is removed
 * once its batch was taken. A host that starts sends what a host before it left behind.
 *
 * Files are segments `{pid}-{n}.jsonl` in `{home}/host/reports/`: a flush seals the current one
 * and writes the next reports to a new one, so a segment's reports are exactly one batch's.
 */
import {
  closeSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import type { RunReportBatch } from "../common/protocol/runs.ts";
import { processAlive } from "./process-alive.ts";

type Report = RunReportBatch["runs"][number];

export class ReportJournal {
  #fd: number | undefined;
  #path = "";
  #count = 0;

  private constructor(private readonly dir: string) {}

  /** The journal in `dir`, and the reports a stopped host left there (the last of each run). */
  static open(dir: string): { journal: ReportJournal; leftover: Report[]; files: string[] } {
    mkdirSync(dir, { recursive: true });
    // A live host's segments (another host on this home) are its own to send.
    const files = readdirSync(dir)
      .filter((name) => /^\d+-\d+\.jsonl$/.test(name) && !processAlive(Number(name.split("-")[0])))
      .map((name) => join(dir, name));
    const last = new Map<string, Report>();
    for (const file of files) {
      for (const line of readFileSync(file, "utf8").split("\n")) {
        // A line cut by the kill is the one report whose write did not finish: its run's
        // caller did not get an answer either.
        const report = parseLine(line);
        if (report) last.set(report.id, report);
      }
    }
    return { journal: new ReportJournal(dir), leftover: [...last.values()], files };
  }

  append(report: Report): void {
    if (this.#fd === undefined) {
      this.#path = join(this.dir, `${process.pid}-${++this.#count}.jsonl`);
      this.#fd = openSync(this.#path, "a");
    }
    writeSync(this.#fd, `${JSON.stringify(report)}\n`);
  }

  /**
   * Ends the current segment (its reports go out now; the next report starts another): its file,
   * to remove once they arrived or were refused (none if no report was written).
   */
  seal(): string[] {
    if (this.#fd === undefined) return [];
    closeSync(this.#fd);
    this.#fd = undefined;
    return [this.#path];
  }
}

/** Removes segments once their reports were taken (sealed, or left by a stopped host). */
export function removeFiles(files: string[]): void {
  for (const file of files) rmSync(file, { force: true });
}

function parseLine(line: string): Report | undefined {
  if (!line) return undefined;
  try {
    const report = JSON.parse(line) as Report;
    return typeof report?.id === "string" ? report : undefined;
  } catch {
    return undefined;
  }
}
