/**
 * Async runs on the host: submitted, run on the app's replicas like any call but with the app's
 * `response_grace_period` as their limit, and reported on completion to a callback URL (the
 * Worker's internal route) — or, for a run that ends while its submitter still waits for the
 * answer (`awaitEnd`), in that answer. The host keeps each run's state for an hour after it
 * ends, so a caller whose report was lost can ask; the Worker's Durable Object is the run's
 * record.
 */
import { request } from "node:http";
import type { Deployment } from "./apps.ts";
import { MAX_INVOKE_BODY_BYTES } from "./limits.ts";
import { msSince, type ReplicaPool } from "./pool/pool.ts";
import { WorkloadError } from "./pool/workload.ts";
import { requestName } from "./routes/forward.ts";
import type { RunReports } from "./run-reports.ts";
import type { CustomReplica } from "./runtimes/custom/replica.ts";

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
  /** A custom app's answer (its body as text, at most 10 MiB). */
  http?: HttpAnswer;
  error?: { message: string };
  runTimeMs?: number;
}

export interface HttpAnswer {
  status_code: number;
  content_type: string | null;
  body: string;
}

/** What an async run does: call a function, or send a custom app one request. */
export type AsyncCall =
  | { runId: string; fn: string; payload: unknown }
  | {
      runId: string;
      http: { method: string; pathAndQuery: string; headers: Record<string, string>; body: Buffer };
    };

/** How long an ended run's state stays answerable. */
const KEEP_ENDED_MS = 60 * 60_000;
/** Callback attempts, and the pause before each retry (a lost callback is also askable). */
const CALLBACK_RETRY_DELAYS_MS = [0, 1_000, 4_000];

interface Submitted {
  run: AsyncRun;
  abort: AbortController;
  /** The submitter still waiting for the run's end (see `awaitEnd`). */
  waiter?: (ended: boolean) => void;
}

export class AsyncRuns {
  readonly #runs = new Map<string, Submitted>();
  #closed = false;

  constructor(
    private readonly pool: ReplicaPool,
    private readonly internalToken: string,
    private readonly reports: RunReports,
  ) {}

  get(runId: string): AsyncRun | undefined {
    return this.#runs.get(runId)?.run;
  }

  /** Starts the run; false if a run with this id exists already. */
  submit(
    deployment: Deployment,
    call: AsyncCall,
    callbackUrl: string | undefined,
  ): AsyncRun | undefined {
    if (this.#runs.has(call.runId)) return undefined;
    const run: AsyncRun = {
      runId: call.runId,
      project: deployment.project,
      app: deployment.app,
      fn: "fn" in call ? call.fn : requestName(call.http.method, call.http.pathAndQuery),
      status: "running",
      startedAt: Date.now(),
      deadlineAt: Date.now() + deployment.config.response_grace_period * 1000,
    };
    const entry: Submitted = { run, abort: new AbortController() };
    this.#runs.set(call.runId, entry);
    void this.#execute(deployment, call, run, entry.abort.signal).then(() => {
      if (!this.#closed) this.reports.asyncRun(run);
      if (entry.waiter) entry.waiter(true);
      else if (run.status !== "cancelled" && callbackUrl) void this.#report(callbackUrl, run);
      setTimeout(() => this.#runs.delete(run.runId), KEEP_ENDED_MS).unref();
    });
    return run;
  }

  /**
   * Waits at most `ms` for a run just submitted to end. True: it ended, and its end is the
   * waiter's to pass on (no callback is sent). False: it is still running — past `ms`, or once
   * `gone` aborts (the submitter went away) — it is reported running to the runs index, and the
   * callback will report its end.
   */
  async awaitEnd(runId: string, ms: number, gone: AbortSignal): Promise<boolean> {
    const entry = this.#runs.get(runId);
    if (entry?.run.status !== "running") return false;
    const ended = ms > 0 && !gone.aborted && (await this.#waitForEnd(entry, ms, gone));
    if (!ended) this.reports.asyncRun(entry.run);
    return ended;
  }

  #waitForEnd(entry: Submitted, ms: number, gone: AbortSignal): Promise<boolean> {
    return new Promise((resolve) => {
      const stop = (ended: boolean) => {
        entry.waiter = undefined;
        clearTimeout(timer);
        gone.removeEventListener("abort", giveUp);
        resolve(ended);
      };
      const giveUp = () => stop(false);
      const timer = setTimeout(giveUp, ms);
      gone.addEventListener("abort", giveUp);
      entry.waiter = stop;
    });
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
    call: AsyncCall,
    run: AsyncRun,
    signal: AbortSignal,
  ): Promise<void> {
    const limitMs = deployment.config.response_grace_period * 1000;
    let ended: Partial<AsyncRun>;
    try {
      if ("http" in call) {
        const started = performance.now();
        const http = await this.pool.use(deployment, (replica) =>
          sendBuffered(replica as CustomReplica, call.http, limitMs, signal),
        );
        const runTimeMs = msSince(started);
        ended =
          http.status_code < 500
            ? { status: "success", http, runTimeMs }
            : {
                status: "failure",
                http,
                runTimeMs,
                error: { message: `the app answered ${http.status_code}` },
              };
      } else {
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
      }
    } catch (err) {
      const message =
        err instanceof WorkloadError && err.failure.kind === "timeout"
          ? `the run exceeded the app's response_grace_period (${deployment.config.response_grace_period} s) and was stopped`
          : err instanceof WorkloadError || err instanceof AppAnswerError
            ? err.message
            : "internal error";
      if (!(err instanceof WorkloadError || err instanceof AppAnswerError))
        console.error("runtime host: async run failed:", err);
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

/** A custom app's answer could not be had; the message is safe to show its caller. */
class AppAnswerError extends Error {}

/**
 * Sends a custom app's replica one buffered request and reads its whole answer (at most
 * 10 MiB). Past `limitMs`, or once `signal` aborts, the request is cut off.
 */
function sendBuffered(
  replica: CustomReplica,
  call: { method: string; pathAndQuery: string; headers: Record<string, string>; body: Buffer },
  limitMs: number,
  signal: AbortSignal,
): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const upstream = request(`${replica.origin}${call.pathAndQuery}`, {
      method: call.method,
      headers: { ...call.headers, "content-length": String(call.body.length) },
      signal,
    });
    const timer = setTimeout(() => {
      upstream.destroy();
      reject(new WorkloadError({ kind: "timeout", ms: limitMs }));
    }, limitMs);
    upstream.on("response", (answer) => {
      const chunks: Buffer[] = [];
      let size = 0;
      answer.on("data", (chunk: Buffer) => {
        size += chunk.length;
        if (size > MAX_INVOKE_BODY_BYTES) {
          upstream.destroy();
          clearTimeout(timer);
          reject(new AppAnswerError("the app's answer is larger than 10 MiB"));
          return;
        }
        chunks.push(chunk);
      });
      answer.on("end", () => {
        clearTimeout(timer);
        resolve({
          status_code: answer.statusCode ?? 502,
          content_type: answer.headers["content-type"] ?? null,
          body: Buffer.concat(chunks).toString("utf8"),
        });
      });
    });
    upstream.on("error", (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      if (err.code === "ECONNREFUSED" || err.code === "ECONNRESET") replica.fail();
      reject(new AppAnswerError(`the app's server failed to answer (${err.code ?? err.message})`));
    });
    upstream.end(call.body);
  });
}
