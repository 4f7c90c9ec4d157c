/**
 * Keeps one warm replica per app, of the app's current version. A replica of an older version
 * finishes the calls it has, then stops. Scaling (min/max replicas, concurrency, cooldown) comes
 * later; for now every call of an app goes to its one replica, which runs them concurrently.
 */
import { appKey } from "../names.ts";
import {
  type CallOutcome,
  type CallRequest,
  type Workload,
  WorkloadError,
  type WorkloadFactory,
  type WorkloadSpec,
} from "./workload.ts";

/** What the pool needs to know of a deployment: which replica runs it, and its identity. */
export interface PoolTarget extends WorkloadSpec {
  /** Changes whenever the files behind `version` do (a re-deploy of the same version). */
  digest: string;
}

interface Slot {
  target: PoolTarget;
  workload: Workload;
  ready: Promise<void>;
  /** Calls waiting for or running on this replica. */
  users: number;
  retired: boolean;
}

export interface TimedOutcome {
  outcome: CallOutcome;
  /** Milliseconds the call took on the replica, start-up excluded. */
  runTimeMs: number;
}

const sameTarget = (a: PoolTarget, b: PoolTarget) =>
  a.version === b.version && a.digest === b.digest && a.dir === b.dir;

export class ReplicaPool {
  readonly #current = new Map<string, Slot>();
  readonly #all = new Set<Slot>();
  #closing = false;

  constructor(private readonly create: WorkloadFactory) {}

  /** Runs a call on a warm replica of `target`, starting one if there is none. */
  async call(target: PoolTarget, call: CallRequest, timeoutMs: number): Promise<TimedOutcome> {
    if (this.#closing) throw new WorkloadError({ kind: "closing" });
    const slot = this.#slotFor(target);
    slot.users++;
    try {
      await slot.ready;
      const started = performance.now();
      const outcome = await slot.workload.invoke(call, timeoutMs);
      return { outcome, runTimeMs: Math.round((performance.now() - started) * 100) / 100 };
    } finally {
      slot.users--;
      if (slot.retired && slot.users === 0) void slot.workload.stop();
    }
  }

  /** After a deploy: the app's replica of any other version drains and stops. */
  retireOutdated(target: PoolTarget): void {
    const slot = this.#current.get(appKey(target.project, target.app));
    if (slot && !sameTarget(slot.target, target)) this.#retire(slot);
  }

  /** The replicas alive now (for tests and, later, `runlet logs`). */
  workloads(): Workload[] {
    return [...this.#all].map((slot) => slot.workload);
  }

  /** Stops every replica; calls in flight fail with a `closing` error. */
  async close(): Promise<void> {
    this.#closing = true;
    await Promise.all([...this.#all].map((slot) => slot.workload.stop()));
  }

  #slotFor(target: PoolTarget): Slot {
    const key = appKey(target.project, target.app);
    const current = this.#current.get(key);
    if (current?.workload.accepting && sameTarget(current.target, target)) return current;
    if (current) this.#retire(current);

    const workload = this.create({
      project: target.project,
      app: target.app,
      version: target.version,
      dir: target.dir,
    });
    const slot: Slot = { target, workload, ready: workload.start(), users: 0, retired: false };
    this.#current.set(key, slot);
    this.#all.add(slot);
    const forget = () => {
      if (this.#current.get(key) === slot) this.#current.delete(key);
    };
    // A replica that failed to start is dropped: the next call starts a fresh one.
    slot.ready.catch(forget);
    workload.onExit(() => {
      forget();
      this.#all.delete(slot);
    });
    return slot;
  }

  #retire(slot: Slot): void {
    slot.retired = true;
    const key = appKey(slot.target.project, slot.target.app);
    if (this.#current.get(key) === slot) this.#current.delete(key);
    if (slot.users === 0) void slot.workload.stop();
  }
}
