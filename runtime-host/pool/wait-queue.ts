/**
 * One app's calls waiting for a replica slot, in the order they arrived, and whose turn a freed
 * slot is: the waiter that arrived first — unless that waiter is an async run, whose slot then
 * goes to the waiting async run with the smallest `order` (equal orders: the first to arrive).
 * A waiter leaves early when its wait is over or its signal aborts (`withdrawn`). One that came
 * while none of the app's replicas was ready (`startingMs`) waits for the first to be ready
 * (`ready()`), then its `waitMs` from there.
 */
import { WorkloadError } from "./workload.ts";

/** How one call waits for its slot. */
export interface WaitOptions {
  /** Aborting it while the call waits takes the call out of the queue (`withdrawn`). */
  signal?: AbortSignal;
  /** Longest the call waits for a slot (ms); `Infinity`: no limit. */
  waitMs: number;
  /**
   * Given while none of the app's replicas is ready yet (they start): the longest the call waits
   * (ms) unless one gets ready first; once one does (`ready()`), its `waitMs` counts from then.
   */
  startingMs?: number;
  /**
   * Marks the call an async run, and its place among the waiting async runs (its creation
   * time): the smallest goes first.
   */
  order?: number;
}

/** A call waiting for a slot; `grant` and `fail` each end its wait (timer and signal). */
export interface Waiter<Slot> {
  /** An async run's order; undefined for a sync call. */
  readonly order: number | undefined;
  grant(slot: Slot): void;
  fail(error: WorkloadError): void;
  /** Set while it waits for the app's first ready replica (`startingMs`): starts its `waitMs`. */
  untilReady?: () => void;
}

/** Longest delay `setTimeout` takes; a longer wait gets no timer (it would fire at once). */
const MAX_TIMER_MS = 2 ** 31 - 1;

export class WaitQueue<Slot> {
  readonly #waiters: Waiter<Slot>[] = [];

  get length(): number {
    return this.#waiters.length;
  }

  /**
   * Resolves with the slot granted to the call; rejects with `timedOut(starting)` (`starting`: it
   * waited its `startingMs`, no replica ready meanwhile) or `withdrawn`.
   */
  wait(
    { signal, waitMs, startingMs, order }: WaitOptions,
    timedOut: (starting: boolean) => WorkloadError,
  ): Promise<Slot> {
    return new Promise<Slot>((resolve, reject) => {
      const leave = (error: WorkloadError) => {
        const at = this.#waiters.indexOf(waiter);
        if (at >= 0) this.#waiters.splice(at, 1);
        waiter.fail(error);
      };
      const withdraw = () => leave(new WorkloadError({ kind: "withdrawn" }));
      let timer: NodeJS.Timeout | undefined;
      const arm = (ms: number, starting: boolean) => {
        clearTimeout(timer);
        timer = ms <= MAX_TIMER_MS ? setTimeout(() => leave(timedOut(starting)), ms) : undefined;
      };
      arm(startingMs ?? waitMs, startingMs !== undefined);
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", withdraw);
      };
      const waiter: Waiter<Slot> = {
        order,
        grant(slot) {
          done();
          resolve(slot);
        },
        fail(error) {
          done();
          reject(error);
        },
        untilReady:
          startingMs === undefined
            ? undefined
            : () => {
                waiter.untilReady = undefined;
                arm(waitMs, false);
              },
      };
      signal?.addEventListener("abort", withdraw, { once: true });
      this.#waiters.push(waiter);
    });
  }

  /** Takes off the queue the waiter whose turn the next free slot is. */
  next(): Waiter<Slot> | undefined {
    const waiters = this.#waiters;
    const first = waiters[0];
    if (first?.order === undefined) return waiters.shift();
    let at = 0;
    let smallest = first.order;
    for (const [i, waiter] of waiters.entries()) {
      if (waiter.order !== undefined && waiter.order < smallest) {
        at = i;
        smallest = waiter.order;
      }
    }
    return waiters.splice(at, 1)[0];
  }

  /** A replica of the app is ready: the waiters that waited for one get their `waitMs` from now. */
  ready(): void {
    for (const waiter of this.#waiters) waiter.untilReady?.();
  }

  /** Fails every waiter with `error`. */
  failAll(error: () => WorkloadError): void {
    for (const waiter of this.#waiters.splice(0)) waiter.fail(error());
  }
}
