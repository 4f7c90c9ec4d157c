/**
 * The runs index hears of the synchronous runs a host served from the host itself: it knows
 * how each one ended, and the Worker's answer then waits for no second request. Reports are
 * gathered for a few milliseconds and sent together (`POST {control plane}/internal/runs`),
 * off every caller's path; a failed send is retried once, then logged.
 */
import { timeOfId } from "../common/ids.ts";

export interface RunReport {
  projectId: string;
  app: string;
  function: string;
  async: false;
  status: "success" | "failure";
  createdAt: number;
  finishedAt: number;
  runTimeMs: number | null;
}

/** How long reports are gathered before they are sent, and the most sent at once. */
const GATHER_MS = 25;
const BATCH = 500;
const RETRY_MS = 1_000;

export class RunReports {
  #queued: Array<RunReport & { id: string }> = [];
  #timer: NodeJS.Timeout | undefined;
  readonly #sending = new Set<Promise<void>>();

  /** Without a control plane URL (a host on its own, in tests) nothing is reported. */
  constructor(
    private readonly controlPlaneUrl: string | undefined,
    private readonly internalToken: string,
  ) {}

  /** Reports a run that ended on this host; ids not made by Runlet's Worker are not runs. */
  ended(runId: string, run: Omit<RunReport, "async" | "createdAt" | "finishedAt">): void {
    const createdAt = timeOfId(runId);
    if (!this.controlPlaneUrl || createdAt === undefined) return;
    this.#queued.push({ id: runId, ...run, async: false, createdAt, finishedAt: Date.now() });
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
    while (this.#queued.length) {
      const sent = this.#send(this.#queued.splice(0, BATCH));
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
