/**
 * Async runs on the host. The Worker holds each accepted run queued and hands it over (submits
 * it) as the app can take it; the host keeps it `queued` until a replica slot is free — as long
 * as that takes, oldest run first (see pool.ts) — then runs it like any call but with the app's
 * `response_grace_period`, counted from its start, as its limit. The submission is answered
 * once the run has started: with its end if it ends within the submitter's wait (no callback is
 * sent), else as running, its end going to the callback URL (the Worker's internal route).
 *
 * A run leaves without a trace while it is queued when its submitter goes away or the host
 * stops (the Worker still holds it and submits it again), and when the app's queue is full, the
 * app is removed or the host is closing (the submission is refused). Cancelling a queued run
 * ends it `cancelled` at once. The host keeps an ended run's state for an hour, so a caller
 * whose report was lost can ask; the Worker's Durable Object is the run's record.
 */
import { timeOfId } from "../common/ids.ts";
import type { Deployment } from "./apps.ts";
import { failureOf, type RunEnd, runCall } from "./async-run-call.ts";
import type { ReplicaPool } from "./pool/pool.ts";
import { WorkloadError } from "./pool/workload.ts";
import type { RunReports } from "./run-reports.ts";
import { requestName } from "./runs/describe.ts";
import type { AsyncCall, AsyncRun } from "./runs/types.ts";

/** Who submitted a run, and how it waits for the answer. */
export interface Submitter {
  /** Where the run's end is reported unless the submission's answer carries it. */
  callbackUrl: string | undefined;
  /** How long, once the run has started, the answer waits for its end (ms). */
  waitMs: number;
  /** Aborts once the submitter's connection has closed. */
  gone: AbortSignal;
}

/** A submission's answer; a refused one throws a `WorkloadError` (busy, removed, closing). */
export type Submission =
  /** A run with this id is known already (any status): nothing was submitted. */
  | { kind: "exists"; run: AsyncRun }
  /** It started and is running past the submitter's wait: its end goes to the callback. */
  | { kind: "running"; run: AsyncRun }
  /** It ended (or was cancelled) before the answer: the answer carries its end. */
  | { kind: "ended"; run: AsyncRun }
  /** The submitter went away while the run was queued: it is gone, nothing to answer. */
  | { kind: "withdrawn" };

/** What the submitter hears of its run: it started, it ended, or it left the queue unstarted. */
type RunEvent = "started" | "ended" | WorkloadError;

interface Submitted {
  run: AsyncRun;
  /** Aborted once the run is to leave the queue unstarted: cancelled, withdrawn, host closing. */
  leave: AbortController;
  /** Aborted by `cancel`: a running run's work is told to stop. */
  cancel: AbortController;
  /** The submitter still waiting for its answer; it takes the run's end if the run ends now. */
  waiter?: (event: RunEvent) => void;
}

/** How long an ended run's state stays answerable. */
const KEEP_ENDED_MS = 60 * 60_000;
/** Callback attempts, and the pause before each retry (a lost callback is also askable). */
const CALLBACK_RETRY_DELAYS_MS = [0, 1_000, 4_000];

export class AsyncRuns {
  readonly #runs = new Map<string, Submitted>();
  /** Set by `close`: no run is accepted any more, no callback or report sent. */
  #closed = false;

  constructor(
    private readonly pool: ReplicaPool,
    private readonly internalToken: string,
    private readonly reports: RunReports,
  ) {}

  get(runId: string): AsyncRun | undefined {
    return this.#runs.get(runId)?.run;
  }

  /** Queues `call` as a run of `deployment` and answers once it has started, or why not. */
  async submit(deployment: Deployment, call: AsyncCall, submitter: Submitter): Promise<Submission> {
    const known = this.#runs.get(call.runId);
    if (known) return { kind: "exists", run: known.run };
    if (this.#closed) throw new WorkloadError({ kind: "closing" });
    const entry: Submitted = {
      run: {
        runId: call.runId,
        project: deployment.project,
        app: deployment.app,
        fn: "fn" in call ? call.fn : requestName(call.http.method, call.http.pathAndQuery),
        status: "queued",
      },
      leave: new AbortController(),
      cancel: new AbortController(),
    };
    this.#runs.set(call.runId, entry);
    const answer = this.#answerOf(entry, submitter);
    void this.#execute(deployment, call, entry).then((left) =>
      this.#settle(entry, left, submitter.callbackUrl),
    );
    const heard = await answer;
    if (heard instanceof WorkloadError) {
      if (heard.failure.kind === "withdrawn") return { kind: "withdrawn" };
      throw heard;
    }
    const { run } = entry;
    if (heard === "ended" || run.status !== "running") return { kind: "ended", run };
    this.reports.running(run);
    return { kind: "running", run };
  }

  /**
   * What the submitter is answered: the run's end if it ends before the answer (queued, or
   * within `waitMs` of its start); "started" once it has run `waitMs` past its start, or its
   * submitter went away after the start; a `WorkloadError` if it left the queue unstarted (a
   * submitter gone meanwhile withdraws it at once).
   */
  #answerOf(entry: Submitted, { waitMs, gone }: Submitter): Promise<RunEvent> {
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const answer = (event: RunEvent) => {
        entry.waiter = undefined;
        clearTimeout(timer);
        gone.removeEventListener("abort", goneAway);
        resolve(event);
      };
      const goneAway = () => {
        if (entry.run.status !== "queued") return answer("started");
        this.#forget(entry);
        entry.leave.abort();
        answer(new WorkloadError({ kind: "withdrawn" }));
      };
      entry.waiter = (event) => {
        if (event !== "started") answer(event);
        else if (waitMs <= 0) answer("started");
        else timer = setTimeout(() => answer("started"), waitMs);
      };
      if (gone.aborted) goneAway();
      else gone.addEventListener("abort", goneAway);
    });
  }

  /**
   * Cancels a queued or running run: it ends `cancelled` now (a queued one leaves the queue and
   * its submitter hears so at once, a running one's work is told to stop); a result that comes
   * later is dropped.
   */
  cancel(runId: string): AsyncRun | undefined {
    const entry = this.#runs.get(runId);
    if (!entry) return undefined;
    const { run } = entry;
    if (run.status === "queued" || run.status === "running") {
      const queued = run.status === "queued";
      Object.assign(run, { status: "cancelled", finishedAt: Date.now() });
      entry.leave.abort();
      entry.cancel.abort();
      if (queued) entry.waiter?.("ended");
    }
    return run;
  }

  /**
   * The host is stopping: queued runs are withdrawn (their submitters are refused, `closing`),
   * running ones end as failed; no callbacks are sent.
   */
  close(): void {
    this.#closed = true;
    for (const entry of [...this.#runs.values()]) {
      const { run } = entry;
      if (run.status === "queued") {
        this.#forget(entry);
        entry.leave.abort();
        entry.waiter?.(new WorkloadError({ kind: "closing" }));
      } else if (run.status === "running") {
        Object.assign(run, {
          status: "failure",
          finishedAt: Date.now(),
          error: { message: "the runtime host stopped during the run" },
        });
      }
    }
  }

  /**
   * Waits for a slot, runs the call and records its end. Resolves with the reason the run left
   * the queue unstarted, if it did (it is then to be forgotten), else undefined.
   */
  async #execute(
    deployment: Deployment,
    call: AsyncCall,
    entry: Submitted,
  ): Promise<WorkloadError | undefined> {
    const { run, leave } = entry;
    const order = timeOfId(run.runId) ?? Date.now(); // an id of unknown age: as old as now
    let ended: RunEnd;
    try {
      ended = await this.pool.use(
        deployment,
        (workload) => {
          // It had its slot while its replica started: it may have left meanwhile.
          if (leave.signal.aborted) throw new WorkloadError({ kind: "withdrawn" });
          this.#start(entry, deployment);
          return runCall(workload, deployment, call, entry.cancel.signal);
        },
        { signal: leave.signal, waitMs: Number.POSITIVE_INFINITY, order },
      );
    } catch (err) {
      const left = this.#leftQueue(entry, err);
      if (left) return left;
      ended = failureOf(err, deployment);
    }
    // Unless it was cancelled or the host closed meanwhile. A run still queued ends here when
    // its replica failed to start.
    if (run.status === "queued" || run.status === "running") {
      Object.assign(run, ended, { finishedAt: Date.now() });
    }
    return undefined;
  }

  #start({ run, waiter }: Submitted, deployment: Deployment): void {
    const now = Date.now();
    const deadlineAt = now + deployment.config.response_grace_period * 1000;
    Object.assign(run, { status: "running", startedAt: now, deadlineAt });
    waiter?.("started");
  }

  /** Why the run, still queued, left the queue without starting; undefined if it did not. */
  #leftQueue({ run }: Submitted, err: unknown): WorkloadError | undefined {
    if (!(err instanceof WorkloadError) || run.status !== "queued") return undefined;
    if (this.#closed) return new WorkloadError({ kind: "closing" });
    switch (err.failure.kind) {
      case "withdrawn": // its submitter went away
      case "busy":
      case "removed":
      case "closing":
        return err;
      default:
        return undefined; // its replica failed to start: the run ends, failed
    }
  }

  /** Passes on how the run went: its end to the submitter or the callback (its shard indexes it). */
  #settle(
    entry: Submitted,
    left: WorkloadError | undefined,
    callbackUrl: string | undefined,
  ): void {
    if (left) {
      this.#forget(entry);
      entry.waiter?.(left);
      return;
    }
    const { run } = entry;
    if (entry.waiter) entry.waiter("ended");
    else if (run.status !== "cancelled" && callbackUrl) void this.#report(callbackUrl, run);
    setTimeout(() => this.#forget(entry), KEEP_ENDED_MS).unref();
  }

  /** The host knows the run no more (unless its id is another run's by now). */
  #forget(entry: Submitted): void {
    if (this.#runs.get(entry.run.runId) === entry) this.#runs.delete(entry.run.runId);
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
