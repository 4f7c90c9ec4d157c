/**
 * Whether the host takes new work, and the requests that brought work and are not answered yet
 * (sync calls, async submissions, deploys). A host told to stop closes its intake: new work is
 * refused (503), what is in flight is waited for, up to a bound (see `startHost`'s `close`).
 */
import { HttpError } from "./http/errors.ts";

export class Intake {
  #open = true;
  #inFlight = 0;
  #onIdle = new Set<() => void>();

  get open(): boolean {
    return this.#open;
  }

  get inFlight(): number {
    return this.#inFlight;
  }

  /** Runs `work` as a request in flight; refuses it (503) once the intake is closed. */
  async take<T>(work: () => Promise<T>): Promise<T> {
    if (!this.#open) throw new HttpError(503, "the runtime host is stopping: try again shortly");
    this.#inFlight++;
    try {
      return await work();
    } finally {
      this.#inFlight--;
      if (this.#inFlight === 0) for (const idle of [...this.#onIdle]) idle();
    }
  }

  /** No new work from now on. */
  close(): void {
    this.#open = false;
  }

  /** Resolves once nothing is in flight (true), or after `ms` (false if something still is). */
  idle(ms: number): Promise<boolean> {
    if (this.#inFlight === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const done = (idle: boolean) => {
        clearTimeout(timer);
        this.#onIdle.delete(onIdle);
        resolve(idle);
      };
      const onIdle = () => done(true);
      const timer = setTimeout(() => done(this.#inFlight === 0), ms);
      this.#onIdle.add(onIdle);
    });
  }
}
