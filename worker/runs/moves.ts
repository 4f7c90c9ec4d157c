/**
 * What moves a shard's runs (see shard.ts): hand-overs to the host while the app has room, what
 * the host says of a run, expiry in the queue, the watchdog's questions, ends and their
 * deliveries, and the one alarm that resumes all of it. The shard's public calls come here.
 */
import type { HostRunState } from "../../common/protocol/host.ts";
import { isEnded } from "../../common/protocol/runs.ts";
import type { Env } from "../env.ts";
import { hostAnswers } from "../host-probe.ts";
import { type OpenCall, suspect, type Target } from "../placement.ts";
import { ShardAlarm } from "./alarm.ts";
import { deliverDue } from "./deliveries.ts";
import { Dispatch } from "./dispatch.ts";
import { cancelOnHost, type HandOver, handOverToBest } from "./host-calls.ts";
import { IndexReports } from "./index-reports.ts";
import type { IdempotencyKeys } from "./keys.ts";
import { failed, hostOutcome } from "./outcome.ts";
import type { RunRow, ShardInfo } from "./rows.ts";
import type { RunStore } from "./store.ts";
import { TargetGate } from "./target-gate.ts";
import { markEnded, markStarted } from "./transitions.ts";
import type { Outcome } from "./types.ts";
import { watch } from "./watchdog.ts";

/** Between two questions to the host about a running run (RUN_WATCHDOG_MS overrides). */
const WATCHDOG_MS = 30_000;
/**
 * A hand-over unanswered this long has its host asked, at the shard's next alarm (at most 30 s
 * away while runs are queued), whether it answers at all: one that does not has its hand-overs
 * withdrawn.
 */
const HANDOVER_CHECK_MS = 30_000;
/** Rows the alarm takes at once; more wait for the next alarm, set at once. */
const ALARM_BATCH = 500;

export class RunMoves {
  info: ShardInfo | undefined;
  /** The app's `replica_concurrency`, as its last accepted run said (1 until one did). */
  replicaConcurrency = 1;
  /** Rows `queued`, counted once at start and kept up to date. */
  queued: number;
  readonly dispatch = new Dispatch();
  readonly index: IndexReports;
  /** Runs this instance is asking the host about, or delivering. */
  readonly #busy = new Set<string>();
  /** Runs started on a host by this instance, counted there until they end (see `#handOver`). */
  readonly #calls = new Map<string, () => void>();
  /** Hosts asked whether they answer at all, and when to ask next (see `#checkHandOvers`). */
  readonly #asking = new Set<string>();
  #nextCheckAt = 0;
  readonly #alarm: ShardAlarm;
  /** Delivery attempts open to each receiver, bounded (target-gate.ts). */
  readonly gate = new TargetGate();

  constructor(
    readonly store: RunStore,
    readonly keys: IdempotencyKeys,
    readonly env: Env,
    storage: DurableObjectStorage,
  ) {
    this.#alarm = new ShardAlarm(storage);
    this.info = store.info();
    this.queued = store.count("queued");
    this.index = new IndexReports(store, env, () => this.schedule());
  }

  /** Every deadline of every run here: expiry, watchdog, delivery attempts, removal. */
  alarmFired(): void {
    this.#alarm.fired();
    const now = Date.now();
    const due = this.store.due(now, ALARM_BATCH);
    for (const row of due) {
      if (this.#busy.has(row.id)) {
        this.store.update(row.id, { due_at: now + this.#watchdogMs() });
      } else if (row.status === "queued") {
        this.#expire(row);
      } else if (row.status === "running") {
        void this.#check(row);
      } else if (row.hook_state === "pending") {
        void this.deliver(row.id);
      } else {
        this.store.remove(row.id); // ended, delivered, retained long enough
      }
    }
    const retry = this.index.retryAt();
    if (retry !== undefined && retry <= now) void this.index.send();
    this.keys.removeExpired(now, ALARM_BATCH);
    if (now >= this.#nextCheckAt) {
      this.#nextCheckAt = now + HANDOVER_CHECK_MS; // a host that answers is asked again then
      void this.checkHandOvers(now - HANDOVER_CHECK_MS);
    }
    this.handOverNext();
    this.schedule(due.length === ALARM_BATCH ? now : undefined);
  }

  /** Hands the oldest queued runs to the host, while the app's share of capacity allows. */
  handOverNext(): void {
    const info = this.info;
    if (!info) return;
    for (const id of this.dispatch.next(this.store, info.capacity, this.queued))
      void this.#handOver(id, info);
  }

  async #handOver(id: string, info: ShardInfo): Promise<void> {
    const run = this.store.queued(id);
    if (!run) return;
    const withdrawn = this.dispatch.begin(id);
    let answer: HandOver;
    // The run counts as a call of the app on its host (placement.ts) from its hand-over to its
    // end: a burst spreads by free slots before the hosts' heartbeats say so.
    let release: (() => void) | undefined;
    let host: Target | undefined;
    try {
      const sentTo = (to: Target, open: OpenCall) => {
        host = to;
        this.dispatch.sentTo(id, to);
        release = open.end;
      };
      const { env, replicaConcurrency } = this;
      const passedOver = this.dispatch.passedOver(id);
      answer = await handOverToBest(
        env,
        info,
        run,
        withdrawn,
        sentTo,
        replicaConcurrency,
        passedOver,
      );
    } finally {
      this.dispatch.end(id);
    }
    const row = this.store.get(id);
    // Where the run went is written with what its host said of it (it took the run, or refused
    // it for good): one commit, not two.
    const decided = ["started", "ended", "known", "refused"].includes(answer.kind);
    if (host && row && decided) this.store.update(id, { host_id: host.id, host_url: host.url });
    // Counted until its end, unless it has ended here already (cancelled, expired): no end comes
    // through `end` again to stop counting it.
    const running =
      (answer.kind === "started" || answer.kind === "known") && answer.run.status === "running";
    if (release && running && row && !isEnded(row.status)) this.#calls.set(id, release);
    else release?.();
    if (row && answer.kind !== "withdrawn") {
      if (answer.kind === "later") {
        this.dispatch.pause();
      } else if (answer.kind === "elsewhere") {
        this.dispatch.answered();
        if (host) this.dispatch.passOver(id, host.url, answer.message);
      } else {
        this.dispatch.answered();
        if (answer.kind !== "refused") this.hostSays(row, answer.run);
        else if (row.status === "queued") this.end(row, failed(answer.message), true);
      }
    }
    this.handOverNext();
    this.schedule();
  }

  /** What the host says of a run (its answer, its callback, its state when asked). */
  hostSays(row: RunRow, hostRun: HostRunState): void {
    if (isEnded(row.status)) return; // ended here first (cancelled, expired, given up)
    if (hostRun.status === "queued") {
      // An earlier hand-over of it still waits at the host: try again after a pause.
      if (row.status === "queued") this.dispatch.pause();
    } else if (hostRun.status === "running") {
      if (row.status !== "queued") {
        this.store.update(row.id, { host_misses: 0 });
      } else {
        this.queued--;
        this.dispatch.left(row.id);
        markStarted(this.store, row, hostRun, Date.now() + this.#watchdogMs());
      }
    } else if (hostRun.status === "cancelled") {
      this.end(row, { status: "cancelled" }, false);
    } else {
      this.end(row, hostOutcome(hostRun), true, hostRun);
    }
  }

  /**
   * A host lost without a reset (a partition, a machine gone, a frozen process) holds its
   * hand-overs for good: one whose hand-overs went unanswered for a while and that does not
   * answer its `/healthz` has them withdrawn. Their runs, still queued, go to another host (this
   * one passed over for a while); a run it had started just then runs twice, as when a host's
   * connection resets. `since`: hand-overs that began then or earlier.
   */
  async checkHandOvers(since: number): Promise<void> {
    for (const url of this.dispatch.hostsWaitedOn(since)) {
      if (this.#asking.has(url)) continue;
      this.#asking.add(url);
      try {
        if (await hostAnswers(url)) continue;
        console.error(
          `[runs] the runtime host at ${url} does not answer: its hand-overs go elsewhere`,
        );
        suspect(url);
        this.dispatch.withdrawFrom(url);
      } finally {
        this.#asking.delete(url);
      }
    }
  }

  /** A queued run past its `queue_timeout`. */
  #expire(row: RunRow): void {
    const waited = Math.round(((row.expires_at ?? row.created_at) - row.created_at) / 1000);
    const message = `expired in the queue: no replica was free within the app's queue_timeout (${waited} s)`;
    this.end(row, failed(message), true);
    // Withdrawn from the host, unless it started it this instant: then it is stopped.
    if (this.dispatch.withdraw(row.id))
      void cancelOnHost(this.env, this.hostOf(row.id).url, row.id);
  }

  /** The watchdog's question to the host about a running run (see watchdog.ts). */
  async #check(row: RunRow): Promise<void> {
    this.#busy.add(row.id);
    this.store.update(row.id, { due_at: Date.now() + this.#watchdogMs() });
    try {
      const verdict = await watch(this.env, row);
      const now = this.store.get(row.id);
      if (now?.status !== "running") return;
      if (verdict.kind === "failed") this.end(now, failed(verdict.message), true);
      else if (verdict.kind === "ended") this.hostSays(now, verdict.run);
      else this.store.update(row.id, { host_misses: verdict.misses });
    } finally {
      this.#busy.delete(row.id);
      this.schedule();
    }
  }

  /** Ends the run (see transitions.ts) and does what follows: its delivery, the runs index, the alarm. */
  end(
    row: RunRow,
    outcome: Outcome | { status: "cancelled" },
    deliver: boolean,
    byHost?: HostRunState,
  ): void {
    if (row.status === "queued") this.queued--;
    this.dispatch.left(row.id);
    this.#calls.get(row.id)?.();
    this.#calls.delete(row.id);
    if (markEnded(this.store, row, outcome, deliver, byHost)) void this.deliver(row.id);
    if (row.async === 1 || row.hook_state !== null) this.index.soon();
    this.schedule();
  }

  /** Sends the delivery attempts of `id` that are due; the alarm resumes one that must wait. */
  async deliver(id: string): Promise<void> {
    if (this.#busy.has(id)) return;
    this.#busy.add(id);
    try {
      await deliverDue(this.store, id, this.env, () => this.schedule(), this.gate);
    } finally {
      this.#busy.delete(id);
      this.index.soon(); // a delivery that ended is the runs index's news
      this.schedule();
    }
  }

  /** The next alarm: the soonest `due_at`, the end of a pause before handing over again. */
  schedule(soonest?: number): void {
    const times = [soonest, this.store.nextDue(), this.index.retryAt(), this.keys.nextExpiry()];
    if (this.queued > this.dispatch.openCount) times.push(this.dispatch.pausedUntil());
    this.#alarm.set(times, this.queued > 0);
  }

  /**
   * The host a run is being handed to or was handed to (the configured one for a run of before
   * many hosts).
   */
  hostOf(runId: string): Target {
    const handing = this.dispatch.hostOf(runId);
    if (handing) return handing;
    const row = this.store.get(runId);
    return row?.host_url
      ? { id: row.host_id, url: row.host_url }
      : { id: null, url: this.env.RUNTIME_HOST_URL };
  }

  remember(info: ShardInfo): void {
    const known = this.info;
    if (known?.origin === info.origin && known.capacity === info.capacity) return;
    this.store.saveInfo(info);
    this.info = info;
  }

  #watchdogMs(): number {
    return Number(this.env.RUN_WATCHDOG_MS) || WATCHDOG_MS;
  }
}
