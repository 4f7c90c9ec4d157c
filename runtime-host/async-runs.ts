/**
 * Async runs on the host: submitted, run on the app's replicas like any call but with the app's
 * `response_grace_period` as their limit, and reported on completion to a callback URL (the
 * Worker's internal route). The host keeps each run's state for an hour after it ends, so a
 * caller whose callback was lost can ask; the Worker's Durable Object is the run's record.
 */
import type { Deployment } from "./apps.ts";
import type { ReplicaPool } from "./pool/pool.ts";
import { WorkloadError } from "./pool/workload.ts";

export type AsyncStatus = "running" | "success" | "failure" | "cancelled";

export interface AsyncRun {
  runId: string;
  project: string;
  app: string;
  fn: string;
  status: AsyncStatus;
  startedAt: number;
  /** When the run fails unless it has ended: start + the app's response_grace_period. */
  deadlineAt: number;
  finishedAt?: number;
  result?: unknown;
  error?: { message: string };
  runTimeMs?: number;
}

/** How long an ended run's state stays answerable. */
const KEEP_ENDED_MS = 60 * 60_000;
/** Callback attempts, and the pause before each retry (a lost callback is also askable). */
const CALLBACK_RETRY_DELAYS_MS = [0, 1_000, 4_000];

export class AsyncRuns {
  readonly #runs = new Map<string, { run: AsyncRun; abort: AbortController }>();
  #closed = false;

  constructor(
    private readonly pool: ReplicaPool,
    private readonly internalToken: string,
  ) {}

  get(runId: string): AsyncRun | undefined {
    return this.#runs.get(runId)?.run;
  }

  /** Starts the run; false if a run with this id exists already. */
  submit(
    deployment: Deployment,
    call: { fn: string; payload: unknown; runId: string },
    callbackUrl: string | undefined,
  ): AsyncRun | undefined {
    if (this.#runs.has(call.runId)) return undefined;
    const run: AsyncRun = {
      runId: call.runId,
      project: deployment.project,
      app: deployment.app,
      fn: call.fn,
      status: "running",
      startedAt: Date.now(),
      deadlineAt: Date.now() + deployment.config.response_grace_period * 1000,
    };
    const abort = new AbortController();
    this.#runs.set(call.runId, { run, abort });
    void this.#execute(deployment, call, run, abort.signal).then(() => {
      if (run.status !== "cancelled" && callbackUrl) void this.#report(callbackUrl, run);
      setTimeout(() => this.#runs.delete(run.runId), KEEP_ENDED_MS).unref();
    });
    return run;
  }

  /** Cancels a running run: it ends `cancelled` now; a result that comes later is dropped. */
  cancel(runId: string): AsyncRun | undefined {
    const entry = this.#runs.get(runId);
    if (!entry) return undefined;
    if (entry.run.status === "running") {
      Object.assign(entry.run, { status: "cancelled", finishedAt: Date.now() });
      entry.abort.abort();
    }
    return entry.run;
  }

  /** Ends every running run as failed (the host is stopping); no callbacks are sent. */
  close(): void {
    this.#closed = true;
    for (const { run } of this.#runs.values()) {
      if (run.status === "running") {
        Object.assign(run, {
          status: "failure",
          finishedAt: Date.now(),
          error: { message: "the runtime host stopped during the run" },
        });
      }
    }
  }

  async #execute(
    deployment: Deployment,
    call: { fn: string; payload: unknown; runId: string },
    run: AsyncRun,
    signal: AbortSignal,
  ): Promise<void> {
    const limitMs = deployment.config.response_grace_period * 1000;
    let ended: Partial<AsyncRun>;
    try {
      const { outcome, runTimeMs } = await this.pool.call(
        deployment,
        { ...call, async: true, signal },
        limitMs,
      );
      ended =
        outcome.kind === "returned"
          ? { status: "success", result: outcome.value, runTimeMs }
          : {
              status: "failure",
              runTimeMs,
              error: {
                message:
                  outcome.kind === "threw"
                    ? outcome.message
                    : `app '${deployment.app}' has no function '${call.fn}'`,
              },
            };
    } catch (err) {
      const message =
        err instanceof WorkloadError && err.failure.kind === "timeout"
          ? `the run exceeded the app's response_grace_period (${deployment.config.response_grace_period} s) and was stopped`
          : err instanceof WorkloadError
            ? err.message
            : "internal error";
      if (!(err instanceof WorkloadError)) console.error("runtime host: async run failed:", err);
      ended = { status: "failure", error: { message } };
    }
    if (run.status !== "running") return; // cancelled, or the host closed meanwhile
    Object.assign(run, ended, { finishedAt: Date.now() });
  }

  async #report(callbackUrl: string, run: AsyncRun): Promise<void> {
    const body = JSON.stringify(run);
    for (const delay of CALLBACK_RETRY_DELAYS_MS) {
      if (delay) await new Promise((r) => setTimeout(r, delay).unref());
      if (this.#closed) return;
      try {
        const res = await fetch(callbackUrl, {
          method: "POST",
          headers: {
            authorization: `Bearer ${this.internalToken}`,
            "content-type": "application/json",
          },
          body,
          signal: AbortSignal.timeout(10_000),
        });
        await res.arrayBuffer();
        if (res.ok || (res.status >= 400 && res.status < 500 && res.status !== 429)) return;
      } catch {
        // Unreachable or timed out: try again.
      }
    }
    console.error(`runtime host: could not report async run ${run.runId} to its callback`);
  }
}
