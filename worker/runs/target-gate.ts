/**
 * How many delivery attempts a shard has open to one receiver (its URL's origin) at once. A
 * receiver that hangs holds each attempt for its whole timeout: without a bound, a shard whose
 * runs all point at it opened one connection per run (2,000 runs: 2,020 open connections and
 * +135 MB in workerd, measured on `runlet start`), and all of them came back at once. Past the
 * bound an attempt waits, first come first served, for one to that receiver to end; attempts to
 * other receivers never wait behind it.
 */

/** Attempts one shard has open to one receiver at most (docs/webhooks.md). */
export const ATTEMPTS_PER_TARGET = 32;

export class TargetGate {
  readonly #open = new Map<string, number>();
  readonly #waiting = new Map<string, Array<() => void>>();

  constructor(readonly limit = ATTEMPTS_PER_TARGET) {}

  /** Waits for a free place to `url`'s origin; call the release it gives once the attempt ends. */
  async enter(url: string): Promise<() => void> {
    const origin = originOf(url);
    const open = this.#open.get(origin) ?? 0;
    if (open < this.limit) this.#open.set(origin, open + 1);
    else {
      // The place is handed over by a release, so the count stays as it is.
      await new Promise<void>((resolve) => {
        const queue = this.#waiting.get(origin) ?? [];
        queue.push(resolve);
        this.#waiting.set(origin, queue);
      });
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#leave(origin);
    };
  }

  /** Attempts open to `url`'s origin now, and attempts waiting for one of them to end. */
  load(url: string): { open: number; waiting: number } {
    const origin = originOf(url);
    return { open: this.#open.get(origin) ?? 0, waiting: this.#waiting.get(origin)?.length ?? 0 };
  }

  #leave(origin: string): void {
    const queue = this.#waiting.get(origin);
    const next = queue?.shift();
    if (queue?.length === 0) this.#waiting.delete(origin);
    if (next) {
      next();
      return;
    }
    const open = (this.#open.get(origin) ?? 1) - 1;
    if (open > 0) this.#open.set(origin, open);
    else this.#open.delete(origin);
  }
}

function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return url;
  }
}
