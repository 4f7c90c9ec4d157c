/**
 * The calls a managed replica has in flight, by their IPC id. Each settles once: with its
 * `result` message, past its time limit, or with the process's end.
 */
import { type CallOutcome, WorkloadError } from "./workload.ts";

interface PendingCall {
  resolve(outcome: CallOutcome): void;
  reject(error: WorkloadError): void;
  timer: NodeJS.Timeout;
}

export class PendingCalls {
  readonly #calls = new Map<string, PendingCall>();
  #nextId = 0;

  /**
   * A new call: its id, and its outcome once `settle`d. Past `timeoutMs` it fails as a timeout
   * and `timedOut` runs (the replica is killed: the function may be stuck).
   */
  open(timeoutMs: number, timedOut: () => void): { id: string; outcome: Promise<CallOutcome> } {
    const id = String(++this.#nextId);
    const outcome = new Promise<CallOutcome>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#calls.delete(id);
        reject(new WorkloadError({ kind: "timeout", ms: timeoutMs }));
        timedOut();
      }, timeoutMs);
      this.#calls.set(id, { resolve, reject, timer });
    });
    return { id, outcome };
  }

  /** The call `id` returned (a `result`); a call already settled is left alone. */
  settle(id: string, outcome: CallOutcome): void {
    const call = this.#calls.get(id);
    if (!call) return;
    this.#calls.delete(id);
    clearTimeout(call.timer);
    call.resolve(outcome);
  }

  /** The process ended: every call still in flight fails with `error`. */
  failAll(error: WorkloadError): void {
    for (const [id, call] of this.#calls) {
      this.#calls.delete(id);
      clearTimeout(call.timer);
      call.reject(error);
    }
  }
}
