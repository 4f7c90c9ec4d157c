/**
 * The replicas of every app, scaled per its `[scaling]` table:
 *
 * - a call goes to a ready replica with a free slot (fewest calls first), else to a new replica
 *   while there are fewer than `max_replicas`, else it waits in the app's queue; while anyone
 *   waits there, a new call queues behind them;
 * - a freed slot goes to the waiter that arrived first — unless that waiter is an async run: then
 *   to the waiting async run with the smallest `order` (its creation time; equal orders go by
 *   arrival). Sync calls and async runs thus take turns in the order they arrived, and the async
 *   runs among them start oldest first, whatever order they reached the host in;
 * - a waiter waits at most its `waitMs` (by default `queueWaitMs`, 30 s; async runs as long as it
 *   takes), then it is refused as busy (429). A sync call that queues while none of the app's
 *   replicas here is ready (a cold app, a slow start) waits for the first to be ready, then its
 *   `waitMs` from there: at most the app's `start_timeout` and `waitMs` in all (counted from its
 *   arrival, a start of 120 s had every call queued behind it refused). A waiter whose `signal`
 *   aborts leaves the queue at once (`withdrawn`) and takes no slot. An app's queue holds at
 *   most `maxWaiting` waiters: one more is refused as busy at once;
 * - a replica idle for `cooldown` seconds is stopped, down to `min_replicas` (0: scale to zero),
 *   and `min_replicas` are started on deploy and at host start, and replaced when they crash;
 * - with `slots`, a new replica on a host that runs that many first stops the replica idle the
 *   longest of another app above its `min_replicas` (none idle: it starts all the same);
 * - a deploy switches new calls to the new version at once; replicas of the old version finish
 *   the calls they have, then stop. A change of a project's secrets does the same to the
 *   replicas of its apps that read the values before (`secretsChanged`). Removing an app fails
 *   its waiters (`removed`), closing the pool fails every waiter (`closing`).
 *
 * Over 300 lines on purpose: these rules are one state machine over an app's replicas, its
 * queue and its timers, and every method below keeps all of them; split in two, each half would
 * have to keep the other's invariants (the wait queue and the replica kinds are apart already).
 */
import type { AppConfig } from "../../common/app-config.ts";
import { DEFAULT_START_TIMEOUT_S } from "../../common/app-limits.ts";
import type { HostMetrics } from "../../common/protocol/host.ts";
import { appKey } from "../names.ts";
import { msSince } from "../runs/describe.ts";
import type { ReplicaGrants } from "./grants.ts";
import { type WaitOptions, WaitQueue } from "./wait-queue.ts";
import {
  type CallOutcome,
  type CallRequest,
  functionWorkload,
  startLimitMs,
  type Workload,
  WorkloadError,
  type WorkloadFailure,
  type WorkloadSpec,
} from "./workload.ts";

/** What the pool needs to know of a deployment: what to run, its identity and its scaling. */
export interface PoolTarget extends WorkloadSpec {
  /** Changes whenever the files behind `version` do (a re-deploy of the same version). */
  digest: string;
  config: Pick<
    AppConfig,
    "scaling" | "runtime" | "custom" | "response_grace_period" | "start_timeout"
  >;
  /** When the host's registry took it (ISO): orders deployments where numbers do not. */
  deployedAt?: string;
}

/** Starts a replica of a target: managed or custom, sandboxed or not (server.ts decides). */
export type ReplicaFactory = (target: PoolTarget) => Workload;

export interface PoolOptions {
  /** Longest a call waits in an app's queue for a free slot, unless it says otherwise. */
  queueWaitMs: number;
  /** The start limit of an app without `start_timeout` (`DEFAULT_START_TIMEOUT_S` unless given). */
  startTimeoutMs?: number;
  /** Most waiters an app's queue holds; one more is refused as busy at once. */
  maxWaiting: number;
  /** With a registry: a grant before each new replica, so `max_replicas` holds over all hosts. */
  grants?: ReplicaGrants;
  /**
   * Replicas the host runs at once (its registration's `slots`): past it, idle replicas of
   * other apps make room. Without it, every app called within its cooldown kept one: 150 apps
   * called once were 150 replicas on a host of 94 slots.
   */
  slots?: number;
  /**
   * Longest calls wait, once a grant is refused, for this host's retired replicas still
   * finishing calls to end, when it has no other replica of the app; then they go elsewhere.
   * `FINISHING_WAIT_MS` unless given.
   */
  finishingWaitMs?: number;
}

/**
 * How one call waits for its slot (see wait-queue.ts); `waitMs` is `queueWaitMs` unless given.
 * `started`: told once the call has its slot on a ready replica.
 */
export type UseOptions = Partial<WaitOptions> & { started?: () => void };

export interface TimedOutcome {
  outcome: CallOutcome;
  /** Milliseconds the call took on the replica, start-up and queueing excluded. */
  runTimeMs: number;
}

/** An app's replicas: of its current version, and outdated ones still finishing calls. */
export type AppStats = HostMetrics["apps"][number];

interface Replica {
  workload: Workload;
  /** The deployment it runs: a call may have brought an earlier one (`#appFor`). */
  target: PoolTarget;
  /** The version folder it starts from: its files are copied from there until it is ready. */
  from: string;
  ready: Promise<void>;
  isReady: boolean;
  /** Calls given to this replica (running, or waiting for it to start). */
  active: number;
  /** Of an outdated version, or scaled down: takes no new calls, stops once idle. */
  retired: boolean;
  idleTimer?: NodeJS.Timeout;
  /** When it last had no call (the longest idle makes room first). */
  idleSince?: number;
}

/** One app's replicas of its current version, and the calls waiting for a slot. */
interface AppReplicas {
  target: PoolTarget;
  replicas: Set<Replica>;
  /** Retired replicas still finishing calls: they count against `max_replicas` until idle. */
  finishing: Set<Replica>;
  queue: WaitQueue<Replica>;
  /** Set while its calls wait, the grant refused, for retired replicas here to finish. */
  finishingWait?: NodeJS.Timeout;
  /** Set while its calls wait to ask for the refused grant again. */
  askAgain?: NodeJS.Timeout;
}

/** Pause before replacing a crashed replica kept for `min_replicas`. */
const REFILL_DELAY_MS = 1_000;

/**
 * How long calls wait for retired replicas to finish when nothing else here may serve them: a
 * redeploy's short calls end well within it, and by then a heartbeat has told the Worker where
 * the app's new replicas are. A long stream on a retired replica once held them 30 s, then 429.
 */
const FINISHING_WAIT_MS = 2_000;

/**
 * After a refused grant, while calls wait here, the pause before asking again: the control
 * plane's counts of other hosts lag their heartbeats, so a replica another host stopped a moment
 * ago (retired by a redeploy, or idle past its cooldown) still held its place.
 */
const ASK_AGAIN_MS = 1_000;

const sameTarget = (a: PoolTarget, b: PoolTarget) =>
  a.version === b.version && a.digest === b.digest && a.dir === b.dir;

/**
 * Whether `a` came before `b`: by when the registry took each, since an app deleted and deployed
 * again counts from version 1 again (by number, its v1 came before the deleted app's v3); by
 * number where that does not tell (targets without a time, or taken in the same millisecond).
 */
const earlier = (a: PoolTarget, b: PoolTarget) =>
  a.deployedAt && b.deployedAt && a.deployedAt !== b.deployedAt
    ? a.deployedAt < b.deployedAt
    : a.version < b.version;

const usable = (r: Replica) => !r.retired && r.workload.accepting;

/** The app's replicas that take calls (starting ones included). */
const liveCount = (app: AppReplicas) => [...app.replicas].filter(usable).length;

/**
 * The app's replicas here: usable ones, and retired ones still finishing calls. What it says it
 * has when it asks for a grant: counted without those finishing, another host was granted their
 * place while they ran, and the host up since later then had to retire a replica (docs/hosts.md).
 */
const running = (app: AppReplicas) => liveCount(app) + app.finishing.size;

/**
 * How many more replicas the app may start here: below `max_replicas` with the retired ones
 * still finishing calls counted (a redeploy ran the old version's busy replicas and as many new
 * ones at once: twice `max_replicas`).
 */
const room = (app: AppReplicas) => app.target.config.scaling.max_replicas - running(app);

/** Fails every call waiting in the app's queue. */
function failQueued(
  app: AppReplicas,
  failure: Extract<WorkloadFailure, { kind: "closing" | "removed" }>,
): void {
  app.queue.failAll(() => new WorkloadError(failure));
}

export class ReplicaPool {
  readonly #apps = new Map<string, AppReplicas>();
  readonly #all = new Set<Replica>();
  /** Each project's secrets revision, the latest this host heard of. */
  readonly #secrets = new Map<string, number>();
  #closing = false;

  constructor(
    private readonly create: ReplicaFactory,
    private readonly options: PoolOptions,
  ) {}

  /** Runs a call on a replica of `target` (managed runtime). */
  call(
    target: PoolTarget,
    call: CallRequest,
    timeoutMs: number,
    options: UseOptions = {},
  ): Promise<TimedOutcome> {
    return this.use(
      target,
      async (workload) => {
        const started = performance.now();
        try {
          const outcome = await functionWorkload(workload).invoke(call, timeoutMs);
          return { outcome, runTimeMs: msSince(started) };
        } catch (err) {
          const ran =
            err instanceof WorkloadError &&
            (/^(exited|timeout)$/.test(err.failure.kind) ||
              (err.failure.kind === "closing" && err.failure.running === true));
          if (ran) err.runTimeMs ??= msSince(started);
          throw err;
        }
      },
      options,
    );
  }

  /**
   * Holds a slot of a ready replica of `target` while `work` runs: starting or waiting for one
   * as the app's scaling allows. Once the call has its slot, `options.signal` is the work's
   * business. `work` is told the deployment its replica runs, which may be later than `target`.
   */
  async use<T>(
    target: PoolTarget,
    work: (workload: Workload, runsOn: PoolTarget) => Promise<T>,
    options: UseOptions = {},
  ): Promise<T> {
    if (this.#closing) throw new WorkloadError({ kind: "closing" });
    if (options.signal?.aborted) throw new WorkloadError({ kind: "withdrawn" });
    const app = this.#appFor(target, { call: true });
    const replica = await this.#acquire(app, options);
    try {
      await replica.ready;
      options.started?.();
      return await work(replica.workload, replica.target);
    } finally {
      this.#release(app, replica);
    }
  }

  /** After a deploy or at start: switches to `target` and starts its `min_replicas`. */
  deployed(target: PoolTarget): void {
    if (this.#closing) return;
    const app = this.#appFor(target);
    this.#pump(app); // calls already waiting get what a raised max_replicas now allows
    this.#fill(app);
  }

  /** The app is gone: its queued calls fail, its replicas finish what they run, then stop. */
  removed(project: string, app: string): void {
    const key = appKey(project, app);
    const replicas = this.#apps.get(key);
    if (!replicas) return;
    this.#apps.delete(key);
    this.options.grants?.forget(project, app);
    failQueued(replicas, { kind: "removed" });
    for (const replica of replicas.replicas) this.#retire(replicas, replica);
  }

  /**
   * The project's secrets are at `revision` (the control plane told the host, or a heartbeat's
   * answer said so): as a redeploy does, its apps' replicas that read an earlier revision retire
   * — busy ones finish their calls (sync and async), then stop — and new calls go to replicas
   * started from now on, which read the values as they are now. So do the replicas still
   * starting that have not said what they read (their read may have been answered before the
   * change): the calls given to them before it still run there, no call after it does. A
   * revision heard before (or an earlier one) changes nothing; the first news since the host
   * started tells of no change, and replicas starting then are judged once ready.
   */
  secretsChanged(project: string, revision: number | undefined): void {
    const known = this.#secrets.get(project);
    if (revision === undefined || (known !== undefined && revision <= known)) return;
    this.#secrets.set(project, revision);
    const unsaid = (r: Replica) =>
      known !== undefined && !r.isReady && r.workload.secretsRevision === undefined;
    for (const app of this.#apps.values()) {
      if (app.target.project !== project) continue;
      for (const replica of app.replicas)
        if (this.#stale(replica) || unsaid(replica)) this.#retire(app, replica);
      this.#pump(app); // calls waiting here: a replica with the new values
      this.#fill(app); // its min_replicas, with the new values
    }
  }

  /** Whether the replica read its project's secrets before a change this host heard of. */
  #stale(replica: Replica): boolean {
    const read = replica.workload.secretsRevision;
    const known = this.#secrets.get(replica.target.project);
    return read !== undefined && known !== undefined && read < known;
  }

  /**
   * The control plane lets this host keep only `keep` replicas of the app (its `max_replicas`
   * over all hosts, after this host was down: docs/hosts.md). Retires the rest, idle ones first:
   * busy ones finish their calls, then stop. Grants held for it are given up.
   */
  keepAtMost(project: string, app: string, keep: number): void {
    const replicas = this.#apps.get(appKey(project, app));
    const { grants } = this.options;
    if (!replicas || running(replicas) + (grants?.reserved(project, app) ?? 0) <= keep) return;
    grants?.drop(project, app);
    // Only usable ones count: those retired already are leaving, finishing their calls, and a
    // second answer meanwhile retired another usable one for each of them (down to none).
    const excess = Math.max(0, liveCount(replicas) - keep);
    const quietFirst = [...replicas.replicas].filter(usable).sort((x, y) => x.active - y.active);
    for (const replica of quietFirst.slice(0, excess)) this.#retire(replicas, replica);
    this.#pump(replicas); // calls queued here: a replica if one may be had, else elsewhere (429)
  }

  /**
   * The version folders the app's replicas are still starting from (copying their files): the
   * registry keeps them through later deploys (a replica of v1 still starting when v3 arrives).
   */
  startingFrom(project: string, app: string): string[] {
    const key = appKey(project, app);
    return [...this.#all]
      .filter((r) => !r.isReady && appKey(r.workload.spec.project, r.workload.spec.app) === key)
      .map((r) => r.from);
  }

  /** Whether the app has replicas here now. */
  isRunning(project: string, app: string): boolean {
    return (this.#apps.get(appKey(project, app))?.replicas.size ?? 0) > 0;
  }

  /** Each app's replicas and queue, for `GET /internal/metrics`. */
  stats(): AppStats[] {
    return [...this.#apps.values()].map((app) => ({
      project: app.target.project,
      app: app.target.app,
      version: app.target.version,
      queued: app.queue.length,
      reserved: this.options.grants?.reserved(app.target.project, app.target.app) ?? 0,
      replicas: [...app.replicas, ...app.finishing].map((r) => ({
        pid: r.workload.pid ?? null,
        ready: r.isReady,
        active: r.active,
      })),
    }));
  }

  /**
   * The host is stopping: the calls still waiting for a slot fail at once, as not started here
   * (the Worker sends a sync call on to another host), rather than after the grace.
   */
  turnAway(): void {
    for (const app of this.#apps.values()) failQueued(app, { kind: "closing", elsewhere: true });
  }

  /** Stops every replica; calls in flight or queued fail with a `closing` error. */
  async close(): Promise<void> {
    this.#closing = true;
    for (const app of this.#apps.values()) failQueued(app, { kind: "closing" });
    await Promise.all(
      [...this.#all].map((r) => {
        clearTimeout(r.idleTimer);
        return r.workload.stop();
      }),
    );
  }

  /**
   * The app's replicas, switched to `target` if it is another version (the old ones retire). A
   * call that brings an earlier deployment than the pool's (it looked its version up before a
   * deploy reached the pool) runs on the current one: switching back retired the new version's replicas,
   * and a burst of redeploys then started replicas from folders already removed (ENOENT).
   * `deployed()` always switches: it is the registry's word.
   */
  #appFor(target: PoolTarget, { call = false } = {}): AppReplicas {
    const key = appKey(target.project, target.app);
    let app = this.#apps.get(key);
    if (!app) {
      app = { target, replicas: new Set(), finishing: new Set(), queue: new WaitQueue() };
      this.#apps.set(key, app);
    } else if (call && earlier(target, app.target)) {
      return app;
    } else if (!sameTarget(app.target, target)) {
      for (const replica of app.replicas) this.#retire(app, replica);
    }
    app.target = target; // a new version, or the same files with perhaps another scaling
    return app;
  }

  /** A replica with a slot reserved for one call: free, new, or after waiting in the queue. */
  #acquire(app: AppReplicas, options: UseOptions): Promise<Replica> | Replica {
    if (app.queue.length === 0) {
      const replica = this.#freeReplica(app) ?? this.#startIfRoom(app);
      if (replica) {
        this.#reserve(replica);
        return replica;
      }
    }
    if (app.queue.length >= this.options.maxWaiting) {
      throw this.#busy(app, `and its queue is full (${app.queue.length} calls waiting)`);
    }
    const waitMs = options.waitMs ?? this.options.queueWaitMs;
    // A sync call behind replicas that all still start waits for them first (pool rules above).
    const hostLimitMs = this.options.startTimeoutMs ?? DEFAULT_START_TIMEOUT_S * 1000;
    const startMs = startLimitMs(app.target.config.start_timeout, hostLimitMs);
    const cold =
      options.waitMs === undefined && ![...app.replicas].some((r) => usable(r) && r.isReady);
    const startingMs = cold ? startMs + waitMs : undefined;
    const waiting = app.queue.wait({ ...options, waitMs, startingMs }, (starting) =>
      this.#busy(
        app,
        starting
          ? `and the call waited ${(startingMs ?? 0) / 1000} s for a slot, no replica of it ready meanwhile (its start_timeout, ${startMs / 1000} s, then ${waitMs / 1000} s)`
          : `and the call waited ${waitMs / 1000} s for a slot`,
      ),
    );
    this.#pump(app); // slots the queue has not been given yet (a redeploy raised max_replicas)
    return waiting;
  }

  #busy(app: AppReplicas, detail: string, elsewhere?: true, unasked?: string): WorkloadError {
    const { max_replicas, replica_concurrency } = app.target.config.scaling;
    return new WorkloadError({
      kind: "busy",
      max_replicas,
      replica_concurrency,
      detail,
      elsewhere,
      ...(unasked === undefined ? {} : { unasked }),
    });
  }

  /** The usable replica with the fewest calls below `replica_concurrency`; ready ones first. */
  #freeReplica(app: AppReplicas): Replica | undefined {
    const limit = app.target.config.scaling.replica_concurrency;
    let best: Replica | undefined;
    for (const r of app.replicas) {
      if (!usable(r) || r.active >= limit) continue;
      if (
        !best ||
        (r.isReady && !best.isReady) ||
        (r.isReady === best.isReady && r.active < best.active)
      ) {
        best = r;
      }
    }
    return best;
  }

  /**
   * A new replica while the app has room here and — with grants — over all hosts. Without a
   * grant in hand one is asked for and the calls wait. On a refusal:
   * - no replica of the app here, not even a retired one: the waiters fail at once as busy (its
   *   replicas run on other hosts; the Worker tries one);
   * - else, while calls wait, the grant is asked again every `ASK_AGAIN_MS` (the control plane's
   *   counts of other hosts lag their heartbeats), and a slot freed here serves them;
   * - only retired replicas here, still finishing calls, and other hosts holding some of the
   *   app's places: the waiters go elsewhere after `finishingWaitMs` (a long stream on a retired
   *   replica held them 30 s, then 429, while the new version's replicas elsewhere were free).
   *   With no other host they wait for those replicas, up to their own wait.
   */
  #startIfRoom(app: AppReplicas): Replica | undefined {
    if (room(app) <= 0) return undefined;
    const { grants } = this.options;
    if (!grants || grants.take(app.target)) return this.#start(app);
    grants.request(app.target, running(app), (granted, elsewhere, unasked) => {
      if (granted) return this.#pump(app);
      if (app.replicas.size === 0 && app.finishing.size === 0)
        return this.#sendElsewhere(app, unasked);
      app.askAgain ??= setTimeout(() => {
        app.askAgain = undefined;
        this.#pump(app); // calls still waiting here: a free slot, or the grant asked again
      }, ASK_AGAIN_MS).unref();
      // Only where another host holds some of the app's places: with none (one host), the
      // calls wait for this host's retired replicas, up to their own wait, as before.
      if (app.replicas.size === 0 && elsewhere)
        app.finishingWait ??= setTimeout(() => {
          app.finishingWait = undefined;
          if (app.replicas.size === 0) this.#sendElsewhere(app);
        }, this.options.finishingWaitMs ?? FINISHING_WAIT_MS).unref();
    });
    return undefined;
  }

  /** Fails the calls waiting here: the app's replicas run on other hosts, or none may start. */
  #sendElsewhere(app: AppReplicas, unasked?: string): void {
    app.queue.failAll(() => this.#busy(app, "on other hosts: none is free here", true, unasked));
  }

  #reserve(replica: Replica): void {
    replica.active++;
    clearTimeout(replica.idleTimer);
    replica.idleTimer = undefined;
  }

  #release(app: AppReplicas, replica: Replica): void {
    replica.active--;
    if (replica.retired || !replica.workload.accepting) {
      if (replica.active === 0) {
        void replica.workload.stop();
        app.finishing.delete(replica); // its place is free: for the queue, then the minimum
      }
      this.#pump(app);
      this.#fill(app);
      return;
    }
    const next = app.queue.next();
    if (next) {
      this.#reserve(replica);
      next.grant(replica);
    } else if (replica.active === 0) {
      this.#scheduleIdle(app, replica);
    }
  }

  /** Gives queued calls the slots there are: free replicas, or new ones while there is room. */
  #pump(app: AppReplicas): void {
    while (app.queue.length > 0 && !this.#closing) {
      const replica = this.#freeReplica(app) ?? this.#startIfRoom(app);
      if (!replica) return;
      const next = app.queue.next();
      if (!next) return;
      this.#reserve(replica);
      next.grant(replica);
    }
  }

  /** Starts replicas up to `min_replicas`. */
  #fill(app: AppReplicas): void {
    if (this.#closing || this.#apps.get(appKey(app.target.project, app.target.app)) !== app) {
      return;
    }
    const starts = Math.min(app.target.config.scaling.min_replicas - liveCount(app), room(app));
    for (let i = 0; i < starts; i++) {
      const { grants } = this.options;
      if (grants && !grants.take(app.target)) {
        // One grant at a time; each one granted starts one more replica, up to the minimum.
        grants.request(app.target, running(app), (granted) => granted && this.#fill(app));
        return;
      }
      const replica = this.#start(app);
      replica.ready.then(
        () => {
          if (replica.active === 0) this.#scheduleIdle(app, replica);
        },
        () => {}, // a warm replica that cannot start is dropped; the next call shows why
      );
    }
  }

  /** After `cooldown` idle seconds, stops the replica unless the app would fall below its minimum. */
  #scheduleIdle(app: AppReplicas, replica: Replica): void {
    replica.idleSince = Date.now();
    const { min_replicas, cooldown } = app.target.config.scaling;
    if (liveCount(app) <= min_replicas) return;
    replica.idleTimer = setTimeout(() => {
      replica.idleTimer = undefined;
      if (replica.active === 0 && usable(replica) && liveCount(app) > min_replicas) {
        this.#retire(app, replica);
      }
    }, cooldown * 1000);
    replica.idleTimer.unref();
  }

  #start(app: AppReplicas): Replica {
    this.#makeRoom(app);
    const workload = this.create(app.target);
    const replica: Replica = {
      workload,
      target: app.target,
      from: app.target.dir,
      ready: workload.start(),
      isReady: false,
      active: 0,
      retired: false,
    };
    app.replicas.add(replica);
    this.#all.add(replica);
    replica.ready.then(
      () => {
        replica.isReady = true;
        // Its secrets were read before a change heard of while it started: as `secretsChanged`.
        if (!replica.retired && this.#stale(replica)) {
          this.#retire(app, replica);
          this.#pump(app);
          this.#fill(app);
        }
        if (!replica.retired) app.queue.ready(); // the calls waiting for a start: 30 s from now
      },
      () => {}, // the calls given to it see the error; its exit removes it
    );
    workload.onExit(() => {
      clearTimeout(replica.idleTimer);
      app.replicas.delete(replica);
      app.finishing.delete(replica);
      this.#all.delete(replica);
      if (replica.retired) return;
      // Queued calls get a fresh replica. A replica that had been serving and crashed is
      // replaced to keep the minimum, after a pause (an app that crashes at once must not make
      // the host spin); one that never started is not: the next call says why.
      this.#pump(app);
      if (replica.isReady) setTimeout(() => this.#fill(app), REFILL_DELAY_MS).unref();
    });
    return replica;
  }

  /** At `slots` replicas: stops the one idle the longest of another app above its minimum. */
  #makeRoom(starting: AppReplicas): void {
    const { slots } = this.options;
    // Those stopping already are not counted: each start would stop one more for them.
    const held = [...this.#all].filter((r) => !r.retired || r.active > 0).length;
    if (slots === undefined || held < slots) return;
    let oldest: { app: AppReplicas; replica: Replica; since: number } | undefined;
    for (const app of this.#apps.values()) {
      if (app === starting || liveCount(app) <= app.target.config.scaling.min_replicas) continue;
      for (const replica of app.replicas) {
        const since = replica.idleSince ?? Number.POSITIVE_INFINITY;
        if (replica.active > 0 || !replica.isReady || !usable(replica)) continue;
        if (!oldest || since < oldest.since) oldest = { app, replica, since };
      }
    }
    if (oldest) this.#retire(oldest.app, oldest.replica);
  }

  #retire(app: AppReplicas, replica: Replica): void {
    replica.retired = true;
    clearTimeout(replica.idleTimer);
    app.replicas.delete(replica);
    if (replica.active === 0) void replica.workload.stop();
    else app.finishing.add(replica);
  }
}
