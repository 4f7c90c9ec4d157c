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
 * ends it `cancelled` at once. The host keeps an ended run's state a while (runs/ended.ts), so
 * a Worker whose report was lost can ask; the Worker's Durable Object is the run's record.
 *
 * A host told to stop (`stopTaking`, then `close` after a grace) refuses new runs and withdraws
 * its queued ones at once (their submitters hear 503, so the Worker keeps them queued); running
 * runs get the grace to end, and those still running then end `failure` ("the runtime host
 * stopped"), reported like any end.
 */
import { timeOfId } from "../common/ids.ts";
import type { HostRun } from "../common/protocol/host.ts";
import type { Deployment } from "./apps.ts";
import { failureOf, type RunEnd, runCall } from "./async-run-call.ts";
import type { ReplicaPool } from "./pool/pool.ts";
import { WorkloadError } from "./pool/workload.ts";
import type { RunCallbacks } from "./run-callbacks.ts";
import type { RunReports } from "./run-reports.ts";
import { requestName } from "./runs/describe.ts";
import { type KeptRun, keepEnded, takenByWorker } from "./runs/ended.ts";
import type { AsyncCall, Submission, Submitter } from "./runs/types.ts";

/** What the submitter hears of its run: it started, it ended, or it left the queue unstarted. */
type RunEvent = "started" | "ended" | WorkloadError;

interface Submitted extends KeptRun {
  /** Aborted once the run is to leave the queue unstarted: cancelled, withdrawn, host closing. */
  leave: AbortController;
  /** Aborted by `cancel`: a running run's work is told to stop. */
  cancel: AbortController;
  /** Where its end goes unless its submitter's answer carries it. */
  callbackUrl: string | undefined;
  /** The submitter still waiting for its answer; it takes the run's end if the run ends now. */
  waiter?: (event: RunEvent) => void;
}

/** The end of a run still running when the host stopped. */
export const HOST_STOPPED = "the runtime host stopped";

export class AsyncRuns {
  readonly #runs = new Map<string, Submitted>();
  /** Set by `stopTaking`: no run is accepted any more. */
  #refusing = false;
  /** Set by `close`: the runs still running have been ended; no later end is sent. */
  #closed = false;
  /** Told whenever a run leaves `running` (for `idle`). */
  readonly #onEnd = new Set<() => void>();

  constructor(
    private readonly pool: ReplicaPool,
    private readonly callbacks: RunCallbacks,
    private readonly reports: RunReports,
  ) {}

  get(runId: string): HostRun | undefined {
    return this.#runs.get(runId)?.run;
  }

  /** Queues `call` as a run of `deployment` and answers once it has started, or why not. */
  async submit(deployment: Deployment, call: AsyncCall, submitter: Submitter): Promise<Submission> {
    const known = this.#runs.get(call.runId);
    if (known) return { kind: "exists", run: known.run };
    if (this.#refusing) throw new WorkloadError({ kind: "closing" });
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
      callbackUrl: submitter.callbackUrl,
    };
    this.#runs.set(call.runId, entry);
    const answer = this.#answerOf(entry, submitter);
    void this.#execute(deployment, call, entry).then((left) => this.#settle(entry, left));
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
  cancel(runId: string): HostRun | undefined {
    const entry = this.#runs.get(runId);
    if (!entry) return undefined;
    const { run } = entry;
    if (run.status === "queued" || run.status === "running") {
      const queued = run.status === "queued";
      Object.assign(run, { status: "cancelled", finishedAt: Date.now() });
      entry.leave.abort();
      entry.cancel.abort();
      if (queued) entry.waiter?.("ended");
      this.#ended();
    }
    return run;
  }

  /**
   * The host is stopping: no run is accepted any more (`closing`, 503) and the queued ones are
   * withdrawn — their submitters are refused the same way, so the Worker keeps them queued for
   * a host that runs. Running runs go on.
   */
  stopTaking(): void {
    this.#refusing = true;
    for (const entry of [...this.#runs.values()]) {
      if (entry.run.status !== "queued") continue;
      this.#forget(entry);
      entry.leave.abort();
      entry.waiter?.(new WorkloadError({ kind: "closing" }));
    }
  }

  /** Resolves once no run is running (true), or after `ms` (false). */
  idle(ms: number): Promise<boolean> {
    const running = () => [...this.#runs.values()].some((e) => e.run.status === "running");
    if (!running()) return Promise.resolve(true);
    return new Promise((resolve) => {
      const done = (idle: boolean) => {
        clearTimeout(timer);
        this.#onEnd.delete(check);
        resolve(idle);
      };
      const check = () => {
        if (!running()) done(true);
      };
      const timer = setTimeout(() => done(!running()), ms);
      this.#onEnd.add(check);
    });
  }

  /**
   * The host stops now: as `stopTaking`, and each run still running ends `failure` ("the
   * runtime host stopped"): its work is told to stop, and its end goes to its submitter if it
   * still waits, else to its callback (sent within the host's stop, see server.ts). A result
   * that comes later is dropped.
   */
  close(): void {
    this.stopTaking();
    for (const entry of this.#runs.values()) {
      const { run } = entry;
      if (run.status !== "running") continue;
      const finishedAt = Date.now();
      const runTimeMs = run.startedAt === undefined ? undefined : finishedAt - run.startedAt;
      Object.assign(run, {
        status: "failure",
        finishedAt,
        runTimeMs,
        error: { message: HOST_STOPPED },
      });
      entry.cancel.abort();
      if (entry.waiter) entry.waiter("ended");
      else if (entry.callbackUrl) this.callbacks.send(entry.callbackUrl, run);
    }
    this.#closed = true;
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
    // Its limit is the version's it runs on: handed over before a redeploy, it may start on the
    // new one (it took the limit it was handed over with, a redeploy's new limit left unheeded).
    let ran = deployment;
    let ended: RunEnd;
    try {
      ended = await this.pool.use(
        deployment,
        (workload, runsOn) => {
          // It had its slot while its replica started: it may have left meanwhile.
          if (leave.signal.aborted) throw new WorkloadError({ kind: "withdrawn" });
          const { response_grace_period } = runsOn.config;
          ran = { ...deployment, config: { ...deployment.config, response_grace_period } };
          this.#start(entry, ran);
          return runCall(workload, ran, call, entry.cancel.signal);
        },
        { signal: leave.signal, waitMs: Number.POSITIVE_INFINITY, order },
      );
    } catch (err) {
      const left = this.#leftQueue(entry, err);
      if (left) return left;
      ended = failureOf(err, ran);
    }
    // Unless it was cancelled or the host closed meanwhile. A run still queued ends here when
    // its replica failed to start.
    if (run.status === "queued" || run.status === "running") {
      const finishedAt = Date.now();
      // A run that failed once started (past its limit, its answer cut off) ran until now.
      const runTimeMs =
        ended.runTimeMs ?? (run.startedAt === undefined ? undefined : finishedAt - run.startedAt);
      Object.assign(run, ended, { finishedAt }, runTimeMs === undefined ? {} : { runTimeMs });
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
  #leftQueue({ run, waiter }: Submitted, err: unknown): WorkloadError | undefined {
    if (!(err instanceof WorkloadError) || run.status !== "queued") return undefined;
    if (this.#refusing) return new WorkloadError({ kind: "closing" });
    switch (err.failure.kind) {
      case "withdrawn": // its submitter went away
      case "busy":
      case "removed":
      case "closing":
        return err;
      case "load-failed": // the host's own fault (sandbox, secrets, files): a waiting
        // submitter hears 502 elsewhere and hands the run on; otherwise it ends, failed.
        return err.failure.host === true && waiter ? err : undefined;
      default:
        return undefined; // its replica failed to start: the run ends, failed
    }
  }

  /**
   * Passes on how the run went: its end to the submitter or the callback (its shard indexes it).
   * Once the host has closed, the end it gave the run was sent already.
   */
  #settle(entry: Submitted, left: WorkloadError | undefined): void {
    if (left) {
      this.#forget(entry);
      entry.waiter?.(left);
      return;
    }
    const { run, callbackUrl } = entry;
    const forget = () => this.#forget(entry);
    const told = entry.waiter !== undefined || run.status === "cancelled"; // answered, cancelled
    entry.waiter?.("ended");
    keepEnded(entry, told, forget);
    const sent = !told && callbackUrl && !this.#closed && this.callbacks.send(callbackUrl, run);
    if (sent) void sent.then((taken) => taken && takenByWorker(entry, forget));
    this.#ended();
  }

  /** A run left `running`. */
  #ended(): void {
    for (const listener of [...this.#onEnd]) listener();
  }

  /** The host knows the run no more (unless its id is another run's by now). */
  #forget(entry: Submitted): void {
    if (this.#runs.get(entry.run.runId) === entry) this.#runs.delete(entry.run.runId);
  }
}
