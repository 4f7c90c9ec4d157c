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
import { timeOfId } from "../../common/ids.ts";
import type { HostRunState } from "../../common/protocol/host.ts";
import type { RunView } from "../../common/protocol/run-view.ts";
import { isEnded } from "../../common/protocol/runs.ts";
import type { Env } from "../env.ts";
import type { Target } from "../placement.ts";
import { cancelOnHost } from "./host-calls.ts";
import { IdempotencyKeys, stillRunning } from "./keys.ts";
import { MAX_QUEUED_RUNS, SHARDS } from "./limits.ts";
import { RunMoves } from "./moves.ts";
import { RunParts } from "./parts.ts";
import { type Redelivery, reopenDelivery } from "./redelivery.ts";
import { refusal } from "./refusal.ts";
import type { RunRow } from "./rows.ts";
import { RunStore } from "./store.ts";
import { cancelledRunTime, hookOf } from "./transitions.ts";
import type {
  AppLimits,
  AppRequest,
  IdempotencyKey,
  KeptAnswer,
  KeyClaim,
  NewRun,
  Outcome,
  PendingKey,
  Refusal,
  WebhookRequest,
} from "./types.ts";
import { runView } from "./view.ts";

export class RunShard extends DurableObject<Env> {
  readonly #store: RunStore;
  readonly #keys: IdempotencyKeys;
  /** What moves the runs: hand-overs, the host's word, ends, deliveries, the alarm. */
  readonly #runs: RunMoves;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    const parts = new RunParts(ctx.storage.sql);
    this.#store = new RunStore(ctx.storage.sql, parts);
    this.#keys = new IdempotencyKeys(ctx.storage.sql, parts);
    this.#runs = new RunMoves(this.#store, this.#keys, env, ctx.storage);
    // States the index has not confirmed (this shard's last instance stopped first) go now.
    if (this.#store.unindexed(1).length > 0) this.#runs.index.soon();
    // The alarm is set again from the rows: the local runtime does not fire one set by an
    // instance of before a restart. The delete is committed first: deleted and set again to the
    // same time in one commit, it never fired either (a delivery's next attempt waited until
    // something else woke the shard; measured on wrangler 4.72's workerd).
    void ctx.blockConcurrencyWhile(async () => {
      if ((await ctx.storage.getAlarm()) !== null) {
        await ctx.storage.deleteAlarm();
        await ctx.storage.sync();
      }
      this.#runs.schedule();
    });
  }

  /**
   * An async run: queued, durable before this returns (the caller's 202), then handed to the
   * host as soon as the app has room. A full queue refuses it (429) and writes nothing. With a
   * key seen before: the key's run (nothing new), or its refusal.
   */
  accept(
    run: NewRun,
    limits: AppLimits,
    origin: string,
    payload: ArrayBuffer,
    webhook?: WebhookRequest,
    request?: AppRequest,
    key?: IdempotencyKey,
  ): KeyClaim | undefined {
    const seen = key && this.#keys.seen(key, run.createdAt);
    // A sync run's key: an async call's request differs (its query), so 422 came first.
    if (seen)
      return "pending" in seen ? refusal(409, stillRunning(seen.pending), seen.pending) : seen;
    if (this.#runs.queued >= Math.ceil(MAX_QUEUED_RUNS / SHARDS)) {
      return refusal(
        429,
        `app '${run.app}' has too many runs waiting (about ${MAX_QUEUED_RUNS.toLocaleString("en")}): try again once some have run`,
      );
    }
    this.#runs.remember({ project: run.project, app: run.app, origin, capacity: limits.capacity });
    this.#runs.replicaConcurrency = limits.replicaConcurrency ?? this.#runs.replicaConcurrency;
    // The run and its key together, or neither.
    this.ctx.storage.transactionSync(() => {
      this.#store.insertQueued(
        {
          id: run.runId,
          project: run.project,
          app: run.app,
          fn: run.fn,
          createdAt: run.createdAt,
          appId: run.appId,
        },
        limits,
        payload,
        request,
        webhook && hookOf(webhook),
      );
      if (key) this.#keys.take(key, run.runId, true, run.createdAt);
    });
    this.#runs.queued++;
    this.#runs.index.soon();
    this.#runs.handOverNext();
    this.#runs.schedule();
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
    this.#runs.end(this.#store.get(id) as RunRow, outcome, true);
  }

  /**
   * A sync run's key, before its call: taken for `runId` (undefined: go on and run it), or the
   * key's first run (its kept answer), its refusal, or its run whose answer is not kept.
   */
  claim(key: IdempotencyKey, runId: string, retake = false): KeyClaim | PendingKey | undefined {
    const now = Date.now();
    const seen = this.#keys.seen(key, now);
    // `retake`: the Worker found no trace of a lapsed key's run in the runs index.
    if (seen && !(retake && "pending" in seen && seen.lapsed)) return seen;
    this.#keys.take(key, runId, false, now);
    this.#runs.schedule();
    return undefined;
  }

  /** The answer of a sync run whose key `claim` took, kept for the key's replays. */
  keep(keyHash: string, runId: string, answer: KeptAnswer): void {
    this.#keys.keep(keyHash, runId, answer);
  }

  /** A sync run that never reached a host gave no answer: its key is free again. */
  release(keyHash: string, runId: string): void {
    this.#keys.release(keyHash, runId);
  }

  /** The runtime host's report of an async run (its callback). */
  report(runId: string, hostRun: HostRunState): { status: string } | null {
    const row = this.#store.get(runId);
    if (!row) return null;
    this.#runs.hostSays(row, hostRun);
    return { status: (this.#store.get(runId) as RunRow).status };
  }

  view(runId: string): RunView | null {
    const row = this.#store.get(runId);
    return row ? runView(row) : null;
  }

  /**
   * Cancels a queued or running async run of the app `appId`; 409 once it has ended, and for a
   * running one when `onlyIfQueued` (one its host starts this instant is cancelled as it starts).
   */
  async cancel(
    runId: string,
    appId: string,
    onlyIfQueued = false,
  ): Promise<RunView | Refusal | null> {
    const row = this.#store.get(runId);
    if (!row) return null;
    const other = this.#ofEarlierApp(row, appId, "cancelled");
    if (other) return other;
    if (!row.async) return refusal(409, "only async runs can be cancelled");
    if (isEnded(row.status)) return refusal(409, `run '${runId}' has already ended: ${row.status}`);
    if (onlyIfQueued && row.status !== "queued")
      return refusal(
        409,
        `run '${runId}' has started (${row.status}): onlyIfQueued=true cancels only a queued run`,
      );
    this.#runs.end(row, { status: "cancelled" }, false);
    // A queued run's open hand-over is withdrawn; the host may have started it this instant.
    const host = this.#runs.hostOf(runId);
    const handedOver = this.#runs.dispatch.withdraw(runId);
    if (row.status === "running" || handedOver) {
      const onHost = await cancelOnHost(this.env, host.url, runId);
      // Started at that instant, before its hand-over's answer: its view says it ran, where,
      // and for how long (until the cancel ended it here).
      if (row.started_at === null && onHost?.startedAt) {
        const where = { host_id: host.id, host_url: host.url };
        const finishedAt = this.#store.get(runId)?.finished_at ?? Date.now();
        const run_time_ms = cancelledRunTime(onHost.startedAt, finishedAt);
        const changes = { started_at: onHost.startedAt, run_time_ms, ...where, indexed: 0 };
        this.#store.update(runId, changes, true);
        this.#runs.index.soon(); // its end may have reached the index without them
      }
    }
    return runView(this.#store.get(runId) as RunRow);
  }

  /** Sends an ended run's webhook of the app `appId` again (redelivery.ts): its view, or why not. */
  async redeliver(runId: string, to: Redelivery, appId: string): Promise<RunView | Refusal | null> {
    const row = this.#store.get(runId);
    const other = row && this.#ofEarlierApp(row, appId, "sent its webhook again");
    if (other) return other;
    const refused = await reopenDelivery(this.#store, this.env, runId, to);
    if (refused !== undefined) return refused;
    void this.#runs.deliver(runId);
    this.#runs.index.soon();
    this.#runs.schedule();
    return runView(this.#store.get(runId) as RunRow);
  }

  /**
   * After a restart (the Worker now at `origin`): asks the host about every running run at once,
   * asks each host holding a hand-over whether it answers (withdrawing them from one that does
   * not), and hands queued runs over. (Bringing the object up set its alarm again: see the
   * constructor.)
   */
  wake(origin: string): { queued: number; running: number } {
    // The Worker may listen elsewhere now: the host's callbacks go to where it is.
    if (this.#runs.info) this.#runs.remember({ ...this.#runs.info, origin });
    this.#store.checkRunningNow(Date.now());
    void this.#runs.checkHandOvers(Date.now());
    this.#runs.dispatch.resume();
    this.#runs.handOverNext();
    this.#runs.schedule();
    return { queued: this.#runs.queued, running: this.#store.count("running") };
  }

  /** Every deadline of every run here: expiry, watchdog, delivery attempts, removal. */
  override async alarm(): Promise<void> {
    this.#runs.alarmFired();
  }

  /**
   * A run accepted for an app deleted since, whose name was deployed again: it belongs to the
   * app it was accepted for (docs/api.md), so it can be read under the name, not changed by the
   * new app's callers. What decides is the run's creation against the app's, as on the host: a
   * run made after the app `appId` is its, whatever id a Worker's 10 s lookup gave it. (A row
   * from before the run store kept app ids has none: the name's.)
   */
  #ofEarlierApp(row: RunRow, appId: string, verb: string): Refusal | undefined {
    const accepted = this.#store.appIdOf(row.id);
    if (!accepted || accepted === appId) return undefined;
    if (row.created_at >= (timeOfId(appId) ?? Number.POSITIVE_INFINITY)) return undefined;
    return refusal(
      409,
      `run '${row.id}' belongs to an earlier app '${row.app}', deleted since: the app deployed under its name since is another, so the run can be read but not ${verb}`,
    );
  }
}
