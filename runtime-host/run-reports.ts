/**
 * The runs index hears from the host itself of the synchronous runs it served — it knows how
 * each one ended, and the Worker's answer then waits on no request of its own — and of the
 * async runs it has started (`running`). An async run's end is reported by its shard in the
 * Worker, which keeps it until the index has it: a report held here dies with the host. Reports are gathered for a
 * few milliseconds and sent together (`POST {control plane}/internal/runs`), off every caller's
 * path; of several reports of one run in a batch only the last is sent. A batch the control
 * plane could not take (unreachable, 5xx) is sent again for about a minute — a control plane
 * restarting loses no run from the index — then kept on disk for the host's next start; a host
 * that stops tries each once more. Every report is written to disk before it is queued
 * (report-journal.ts), so a host killed before its batch left sends it when it starts again.
 */
import { timeOfId } from "../common/ids.ts";
import type { HostRun } from "../common/protocol/host.ts";
import { controlPlanePath } from "../common/protocol/paths.ts";
import type { RunReport, RunReportBatch } from "../common/protocol/runs.ts";
import { ReportJournal, removeFiles } from "./report-journal.ts";

/** How long reports are gathered before they are sent, and the most sent at once. */
const GATHER_MS = 25;
/**
 * A synchronous run still on its replica this long is listed `running` (`runlet runs`, the
 * dashboard) until its end comes; a shorter one is listed once, ended.
 */
export const SYNC_LISTED_AFTER_MS = 1_000;
const BATCH = 500;
/** The pauses before each new try of a batch the control plane could not take. */
const RETRY_DELAYS_MS = [1_000, 2_000, 4_000, 8_000, 15_000, 30_000];

export class RunReports {
  readonly #queued = new Map<string, RunReport>();
  /** Synchronous runs on a replica, until they are listed running. */
  readonly #syncRunning = new Map<string, NodeJS.Timeout>();
  #timer: NodeJS.Timeout | undefined;
  readonly #sending = new Set<Promise<void>>();

  /** Ends the pauses between tries once the host stops. */
  readonly #closing = new AbortController();
  readonly #journal: ReportJournal | undefined;

  /** Without a control plane URL (a host on its own, in tests) nothing is reported. */
  constructor(
    private readonly controlPlaneUrl: string | undefined,
    private readonly internalToken: string,
    private readonly retryDelaysMs: readonly number[] = RETRY_DELAYS_MS,
    /** This host's id in the registry, named in each report (docs/hosts.md). */
    private readonly hostId?: string,
    private readonly syncListedAfterMs = SYNC_LISTED_AFTER_MS,
    /** Where reports wait on disk until the index has them (none: in memory only). */
    journalDir?: string,
  ) {
    if (!controlPlaneUrl || !journalDir) return;
    const { journal, leftover, files } = ReportJournal.open(journalDir);
    this.#journal = journal;
    // A host before this one was killed or could not reach the index: its reports go first.
    if (files.length > 0) this.#sendAll(leftover, () => removeFiles(files));
  }

  /**
   * A synchronous run has its replica: listed `running` should it still run after
   * `syncListedAfterMs`. `syncOver` once the call is over, however it ended.
   */
  syncStarted(runId: string, run: Pick<RunReport, "projectId" | "app" | "function">): void {
    if (!this.controlPlaneUrl) return;
    const timer = setTimeout(() => {
      this.#syncRunning.delete(runId);
      this.#queue(runId, {
        ...run,
        async: false,
        status: "running",
        finishedAt: null,
        runTimeMs: null,
      });
    }, this.syncListedAfterMs);
    timer.unref();
    this.#syncRunning.set(runId, timer);
  }

  syncOver(runId: string): void {
    clearTimeout(this.#syncRunning.get(runId));
    this.#syncRunning.delete(runId);
  }

  /** A synchronous run that ended on this host. */
  ended(
    runId: string,
    run: Pick<
      RunReport,
      "projectId" | "app" | "function" | "runTimeMs" | "error" | "statusCode"
    > & {
      status: "success" | "failure";
    },
  ): void {
    this.#queue(runId, { ...run, async: false, finishedAt: Date.now() });
  }

  /** An async run that has started and outlasted its submitter's wait. */
  running(run: HostRun): void {
    if (run.status !== "running") return;
    this.#queue(run.runId, {
      projectId: run.project,
      app: run.app,
      function: run.fn,
      async: true,
      status: "running",
      finishedAt: null,
      runTimeMs: null,
    });
  }

  /** Ids not made by Runlet's Worker are not runs. */
  #queue(runId: string, report: Omit<RunReport, "createdAt">): void {
    const createdAt = timeOfId(runId);
    if (!this.controlPlaneUrl || createdAt === undefined) return;
    const full = { ...report, createdAt, ...(this.hostId ? { host: this.hostId } : {}) };
    this.#journal?.append({ id: runId, ...full });
    this.#queued.set(runId, full);
    this.#timer ??= setTimeout(() => this.#flush(), GATHER_MS);
  }

  /** Sends what is gathered now and waits for every send (host shutdown). */
  async close(): Promise<void> {
    this.#closing.abort();
    this.#flush();
    await Promise.all(this.#sending);
  }

  #flush(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const queued = [...this.#queued].map(([id, report]) => ({ id, ...report }));
    this.#queued.clear();
    const sealed = this.#journal?.seal() ?? [];
    this.#sendAll(queued, () => removeFiles(sealed));
  }

  /** Sends `runs` in batches; `taken` once every batch arrived or was refused. */
  #sendAll(runs: RunReportBatch["runs"], taken: () => void): void {
    const sends: Promise<boolean>[] = [];
    for (let at = 0; at < runs.length; at += BATCH)
      sends.push(this.#send(runs.slice(at, at + BATCH)));
    const sent = Promise.all(sends).then((arrived) => {
      if (arrived.every(Boolean)) taken();
    });
    this.#sending.add(sent);
    void sent.then(() => this.#sending.delete(sent));
  }

  /** Whether the batch arrived, or was refused (sending it again would not help either). */
  async #send(runs: RunReportBatch["runs"]): Promise<boolean> {
    for (const delay of [0, ...this.retryDelaysMs]) {
      if (delay) await this.#pause(delay);
      const lastTry = this.#closing.signal.aborted && delay > 0;
      try {
        const res = await fetch(this.controlPlaneUrl + controlPlanePath.runs, {
          method: "POST",
          headers: {
            authorization: `Bearer ${this.internalToken}`,
            "content-type": "application/json",
          },
          body: JSON.stringify({ runs } satisfies RunReportBatch),
          signal: AbortSignal.timeout(10_000),
        });
        await res.arrayBuffer();
        if (res.ok) return true;
        if (res.status < 500) {
          console.error(
            `runtime host: the runs index refused ${runs.length} run report(s) (${res.status})`,
          );
          return true;
        }
      } catch {
        // unreachable: again, after a pause
      }
      if (lastTry) break; // stopping: a try begun after the stop was its last
    }
    console.error(
      `runtime host: ${runs.length} run report(s) could not reach the runs index${this.#journal ? ": kept on disk, sent again when the host starts" : ""}`,
    );
    return false;
  }

  /** Waits `ms`, or less once the host stops. */
  #pause(ms: number): Promise<void> {
    const { signal } = this.#closing;
    if (signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      signal.addEventListener("abort", done, { once: true });
      function done() {
        clearTimeout(timer);
        signal.removeEventListener("abort", done);
        resolve();
      }
    });
  }
}
