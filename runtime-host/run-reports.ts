/**
 * The runs index hears from the host itself of the synchronous runs it served and of the
 * async runs it ran: it knows how each one ended, and neither the Worker's answer nor a run's
 * Durable Object then waits on, or pays for, a request of its own. Reports are gathered for a
 * few milliseconds and sent together (`POST {control plane}/internal/runs`), off every caller's
 * path; of several reports of one run in a batch only the last is sent. A failed send is retried
 * once, then logged.
 */
import { timeOfId } from "../common/ids.ts";
import type { AsyncRun } from "./async-runs.ts";

export interface RunReport {
  projectId: string;
  app: string;
  function: string;
  async: boolean;
  status: "running" | "success" | "failure";
  createdAt: number;
  finishedAt: number | null;
  runTimeMs: number | null;
}

/** How long reports are gathered before they are sent, and the most sent at once. */
const GATHER_MS = 25;
const BATCH = 500;
const RETRY_MS = 1_000;

export class RunReports {
  readonly #queued = new Map<string, RunReport>();
  #timer: NodeJS.Timeout | undefined;
  readonly #sending = new Set<Promise<void>>();

  /** Without a control plane URL (a host on its own, in tests) nothing is reported. */
  constructor(
    private readonly controlPlaneUrl: string | undefined,
    private readonly internalToken: string,
  ) {}

  /** A synchronous run that ended on this host. */
  ended(
    runId: string,
    run: Pick<RunReport, "projectId" | "app" | "function" | "runTimeMs"> & {
      status: "success" | "failure";
    },
  ): void {
    this.#queue(runId, { ...run, async: false, finishedAt: Date.now() });
  }

  /**
   * An async run running, or as it ended. A cancelled one is not reported here: cancelling is
   * the run's record's doing, and the Worker reports it.
   */
  asyncRun(run: AsyncRun): void {
    if (run.status === "cancelled") return;
    this.#queue(run.runId, {
      projectId: run.project,
      app: run.app,
      function: run.fn,
      async: true,
      status: run.status,
      finishedAt: run.finishedAt ?? null,
      runTimeMs: run.runTimeMs ?? null,
    });
  }

  /** Ids not made by Runlet's Worker are not runs. */
  #queue(runId: string, report: Omit<RunReport, "createdAt">): void {
    const createdAt = timeOfId(runId);
    if (!this.controlPlaneUrl || createdAt === undefined) return;
    this.#queued.set(runId, { ...report, createdAt });
    this.#timer ??= setTimeout(() => this.#flush(), GATHER_MS);
  }

  /** Sends what is gathered now and waits for every send (host shutdown). */
  async close(): Promise<void> {
    this.#flush();
    await Promise.all(this.#sending);
  }

  #flush(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const queued = [...this.#queued].map(([id, report]) => ({ id, ...report }));
    this.#queued.clear();
    for (let at = 0; at < queued.length; at += BATCH) {
      const sent = this.#send(queued.slice(at, at + BATCH));
      this.#sending.add(sent);
      void sent.then(() => this.#sending.delete(sent));
    }
  }

  async #send(runs: Array<RunReport & { id: string }>): Promise<void> {
    for (const delay of [0, RETRY_MS]) {
      if (delay) await new Promise((r) => setTimeout(r, delay));
      try {
        const res = await fetch(`${this.controlPlaneUrl}/internal/runs`, {
          method: "POST",
          headers: {
            authorization: `Bearer ${this.internalToken}`,
            "content-type": "application/json",
          },
          body: JSON.stringify({ runs }),
          signal: AbortSignal.timeout(10_000),
        });
        await res.arrayBuffer();
        if (res.ok) return;
        if (res.status < 500) break; // refused: sending it again would not help
      } catch {
        // unreachable: once more
      }
    }
    console.error(`runtime host: ${runs.length} run report(s) could not reach the runs index`);
  }
}
