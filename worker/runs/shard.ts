/**
 * One shard of an app's run store (see shards.ts): its runs as SQLite rows, its queue, and one
 * alarm that serves every deadline of every run in it. Nothing depends on a request staying
 * open: a 12-hour run is a row, a deadline and the alarm.
 *
 *   queued ──host took it (a replica slot)──▶ running ──host reported──▶ success | failure
 *     │ │ └──host refused it (app gone, bad request)──▶ failure
 *     │ └──waited queue_timeout──▶ failure ("expired in the queue")
 *     ├──started and ended within HOST_WAIT_MS (the host's answer is its end)──▶ success | failure
 *     └──DELETE──▶ cancelled          running ──DELETE──▶ cancelled
 *                                     running ──host lost it / deadline passed──▶ failure
 *
 * Queued runs go to the host oldest first, at most `window` at a time (the app's capacity
 * shared by its shards); the host answers a hand-over once the run has a replica. A host that
 * is busy, stopping or unreachable leaves the run queued: it is handed over again later. A run
 * is durable (its row committed) before the caller's 202 leaves.
 */
import { DurableObject } from "cloudflare:workers";
import type { HostRunState } from "../../common/protocol/host.ts";
import type { RunView } from "../../common/protocol/run-view.ts";
import { isEnded } from "../../common/protocol/runs.ts";
import type { Env } from "../env.ts";
import type { Target } from "../placement.ts";
import { ShardAlarm } from "./alarm.ts";
import { deliverDue } from "./deliveries.ts";
import { Dispatch } from "./dispatch.ts";
import { cancelOnHost, type HandOver, handOverToBest } from "./host-calls.ts";
import { IndexReports } from "./index-reports.ts";
import { MAX_QUEUED_RUNS, SHARDS } from "./limits.ts";
import { failed, hostOutcome } from "./outcome.ts";
import { refusal } from "./refusal.ts";
import type { RunRow, ShardInfo } from "./rows.ts";
import { RunStore } from "./store.ts";
import { hookOf, markEnded, markStarted } from "./transitions.ts";
import type { AppLimits, AppRequest, NewRun, Outcome, Refusal, WebhookRequest } from "./types.ts";
import { runView } from "./view.ts";
import { watch } from "./watchdog.ts";

/** Between two questions to the host about a running run (RUN_WATCHDOG_MS overrides). */
const WATCHDOG_MS = 30_000;
/** Rows the alarm takes at once; more wait for the next alarm, set at once. */
const ALARM_BATCH = 500;

export class RunShard extends DurableObject<Env> {
  readonly #store: RunStore;
  #info: ShardInfo | undefined;
  /** Rows `queued`, counted once at start and kept up to date. */
  #queued: number;
  readonly #dispatch = new Dispatch();
  readonly #index: IndexReports;
  /** Runs this instance is asking the host about, or delivering. */
  readonly #busy = new Set<string>();
  readonly #alarm: ShardAlarm;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.#store = new RunStore(ctx.storage.sql);
    this.#alarm = new ShardAlarm(ctx.storage);
    this.#info = this.#store.info();
    this.#queued = this.#store.count("queued");
    this.#index = new IndexReports(this.#store, env, () => this.#schedule());
    // States the index has not confirmed (this shard's last instance stopped first) go now.
    if (this.#store.unindexed(1).length > 0) this.#index.soon();
    // The alarm is set again from the rows: the local runtime does not fire one set by an
    // instance of before a restart.
    void ctx.blockConcurrencyWhile(async () => {
      if ((await ctx.storage.getAlarm()) !== null) await ctx.storage.deleteAlarm();
      this.#schedule();
    });
  }

  /**
   * An async run: queued, durable before this returns (the caller's 202), then handed to the
   * host as soon as the app has room. A full queue refuses it (429) and writes nothing.
   */
  accept(
    run: NewRun,
    limits: AppLimits,
    origin: string,
    payload: ArrayBuffer,
    webhook?: WebhookRequest,
    request?: AppRequest,
  ): Refusal | undefined {
    if (this.#queued >= Math.ceil(MAX_QUEUED_RUNS / SHARDS)) {
      return refusal(
        429,
        `app '${run.app}' has too many runs waiting (about ${MAX_QUEUED_RUNS.toLocaleString("en")}): try again once some have run`,
      );
    }
    this.#remember({ project: run.project, app: run.app, origin, capacity: limits.capacity });
    this.#store.insertQueued(
      { id: run.runId, project: run.project, app: run.app, fn: run.fn, createdAt: run.createdAt },
      limits,
      payload,
      request,
      webhook && hookOf(webhook),
    );
    this.#queued++;
    this.#index.soon();
    this.#handOverNext();
    this.#schedule();
    return undefined;
  }

  /**
   * A synchronous run that answered its caller and has a webhook: recorded as it ended, and its
   * delivery started (driven by this object, so it outlives the Worker's request).
   */
  record(run: NewRun, outcome: Outcome, webhook: WebhookRequest, host?: Target): void {
    const id = run.runId;
    const { project, app, fn, createdAt } = run;
    this.#store.insertEnded({ id, project, app, fn, createdAt }, hookOf(webhook));
    if (host) this.#store.update(id, { host_id: host.id, host_url: host.url });
    this.#end(this.#store.get(id) as RunRow, outcome, true);
  }

  /** The runtime host's report of an async run (its callback). */
  report(runId: string, hostRun: HostRunState): { status: string } | null {
    const row = this.#store.get(runId);
    if (!row) return null;
    this.#hostSays(row, hostRun);
    return { status: (this.#store.get(runId) as RunRow).status };
  }

  view(runId: string): RunView | null {
    const row = this.#store.get(runId);
    return row ? runView(row) : null;
  }

  /** Cancels a queued or running async run; 409 once it has ended. */
  async cancel(runId: string): Promise<RunView | Refusal | null> {
    const row = this.#store.get(runId);
    if (!row) return null;
    if (!row.async) return refusal(409, "only async runs can be cancelled");
    if (isEnded(row.status)) return refusal(409, `run '${runId}' has already ended: ${row.status}`);
    this.#end(row, { status: "cancelled" }, false);
    // A queued run's open hand-over is withdrawn; the host may have started it this instant.
    const handedOver = this.#dispatch.withdraw(runId);
    if (row.status === "running" || handedOver)
      await cancelOnHost(this.env, this.#hostOf(runId), runId);
    return runView(this.#store.get(runId) as RunRow);
  }

  /**
   * After a restart (the Worker now at `origin`): asks the host about every running run at once
   * and hands queued runs over. (Bringing the object up set its alarm again: see the
   * constructor.)
   */
  wake(origin: string): { queued: number; running: number } {
    // The Worker may listen elsewhere now: the host's callbacks go to where it is.
    if (this.#info) this.#remember({ ...this.#info, origin });
    this.#store.checkRunningNow(Date.now());
    this.#dispatch.resume();
    this.#handOverNext();
    this.#schedule();
    return { queued: this.#queued, running: this.#store.count("running") };
  }

  /** Every deadline of every run here: expiry, watchdog, delivery attempts, removal. */
  override async alarm(): Promise<void> {
    this.#alarm.fired();
    const now = Date.now();
    const due = this.#store.due(now, ALARM_BATCH);
    for (const row of due) {
      if (this.#busy.has(row.id)) {
        this.#store.update(row.id, { due_at: now + this.#watchdogMs() });
      } else if (row.status === "queued") {
        this.#expire(row);
      } else if (row.status === "running") {
        void this.#check(row);
      } else if (row.hook_state === "pending") {
        void this.#deliver(row.id);
      } else {
        this.#store.remove(row.id); // ended, delivered, retained long enough
      }
    }
    const retry = this.#index.retryAt();
    if (retry !== undefined && retry <= now) void this.#index.send();
    this.#handOverNext();
    this.#schedule(due.length === ALARM_BATCH ? now : undefined);
  }

  /** Hands the oldest queued runs to the host, while the app's share of capacity allows. */
  #handOverNext(): void {
    const info = this.#info;
    if (!info) return;
    for (const id of this.#dispatch.next(this.#store, info.capacity, this.#queued))
      void this.#handOver(id, info);
  }

  async #handOver(id: string, info: ShardInfo): Promise<void> {
    const run = this.#store.queued(id);
    if (!run) return;
    const withdrawn = this.#dispatch.begin(id);
    let answer: HandOver;
    try {
      answer = await handOverToBest(this.env, this.#store, info, run, withdrawn);
    } finally {
      this.#dispatch.end(id);
    }
    const row = this.#store.get(id);
    if (row && answer.kind !== "withdrawn") {
      if (answer.kind === "later") {
        this.#dispatch.pause();
      } else {
        this.#dispatch.answered();
        if (answer.kind !== "refused") this.#hostSays(row, answer.run);
        else if (row.status === "queued") this.#end(row, failed(answer.message), true);
      }
    }
    this.#handOverNext();
    this.#schedule();
  }

  /** What the host says of a run (its answer, its callback, its state when asked). */
  #hostSays(row: RunRow, hostRun: HostRunState): void {
    if (isEnded(row.status)) return; // ended here first (cancelled, expired, given up)
    if (hostRun.status === "queued") {
      // An earlier hand-over of it still waits at the host: try again after a pause.
      if (row.status === "queued") this.#dispatch.pause();
    } else if (hostRun.status === "running") {
      if (row.status !== "queued") {
        this.#store.update(row.id, { host_misses: 0 });
      } else {
        this.#queued--;
        markStarted(this.#store, row, hostRun, Date.now() + this.#watchdogMs());
      }
    } else if (hostRun.status === "cancelled") {
      this.#end(row, { status: "cancelled" }, false);
    } else {
      this.#end(row, hostOutcome(hostRun), true, hostRun);
    }
  }

  /** A queued run past its `queue_timeout`. */
  #expire(row: RunRow): void {
    const waited = Math.round(((row.expires_at ?? row.created_at) - row.created_at) / 1000);
    const message = `expired in the queue: no replica was free within the app's queue_timeout (${waited} s)`;
    this.#end(row, failed(message), true);
    // Withdrawn from the host, unless it started it this instant: then it is stopped.
    if (this.#dispatch.withdraw(row.id)) void cancelOnHost(this.env, this.#hostOf(row.id), row.id);
  }

  /** The watchdog's question to the host about a running run (see watchdog.ts). */
  async #check(row: RunRow): Promise<void> {
    this.#busy.add(row.id);
    this.#store.update(row.id, { due_at: Date.now() + this.#watchdogMs() });
    try {
      const verdict = await watch(this.env, row);
      const now = this.#store.get(row.id);
      if (now?.status !== "running") return;
      if (verdict.kind === "failed") this.#end(now, failed(verdict.message), true);
      else if (verdict.kind === "ended") this.#hostSays(now, verdict.run);
      else this.#store.update(row.id, { host_misses: verdict.misses });
    } finally {
      this.#busy.delete(row.id);
      this.#schedule();
    }
  }

  /** Ends the run (see transitions.ts) and does what follows: its delivery, the runs index, the alarm. */
  #end(
    row: RunRow,
    outcome: Outcome | { status: "cancelled" },
    deliver: boolean,
    byHost?: HostRunState,
  ): void {
    if (row.status === "queued") this.#queued--;
    if (markEnded(this.#store, row, outcome, deliver, byHost)) void this.#deliver(row.id);
    if (row.async === 1 || row.hook_state !== null) this.#index.soon();
    this.#schedule();
  }

  /** Sends the delivery attempts of `id` that are due; the alarm resumes one that must wait. */
  async #deliver(id: string): Promise<void> {
    if (this.#busy.has(id)) return;
    this.#busy.add(id);
    try {
      await deliverDue(this.#store, id, this.env, () => this.#schedule());
    } finally {
      this.#busy.delete(id);
      this.#index.soon(); // a delivery that ended is the runs index's news
      this.#schedule();
    }
  }

  /** The next alarm: the soonest `due_at`, the end of a pause before handing over again. */
  #schedule(soonest?: number): void {
    const times = [soonest, this.#store.nextDue(), this.#index.retryAt()];
    if (this.#queued > this.#dispatch.openCount) times.push(this.#dispatch.pausedUntil());
    this.#alarm.set(times, this.#queued > 0);
  }

  /** The host a run was handed to (the configured one for a run of before many hosts). */
  #hostOf(runId: string): string {
    return this.#store.get(runId)?.host_url ?? this.env.RUNTIME_HOST_URL;
  }

  #remember(info: ShardInfo): void {
    const known = this.#info;
    if (known?.origin === info.origin && known.capacity === info.capacity) return;
    this.#store.saveInfo(info);
    this.#info = info;
  }

  #watchdogMs(): number {
    return Number(this.env.RUN_WATCHDOG_MS) || WATCHDOG_MS;
  }
}
