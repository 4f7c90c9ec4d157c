/**
 * Spare replica processes, each in a folder of its own (a "slot"), started before any app is
 * known and waiting for one: for the managed runtime node and the shim, for the custom runtime
 * the sandbox with a shell that will exec the entrypoint. A cold start takes one, copies the
 * app's files into its slot and starts the app there — it does not pay for starting a process
 * (or a sandbox). The pool refills itself in the background; when it is empty a new process is
 * started on the spot. A spare that fails to start, or dies while it waits, is replaced after a
 * pause that doubles with each such failure in a row (1 s up to a minute), each step said once
 * in the host's log: a spare that can never start is not started again every second.
 */
import { randomBytes } from "node:crypto";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Replica, WorkloadSpec } from "./workload.ts";

/** A replica that can start before its app is known, then be given one. */
export interface SpareReplica<Spec extends WorkloadSpec> extends Replica {
  startSpare(): Promise<void>;
  assign(spec: Spec): this;
}

/** The pause before a spare that failed (to start, or while it waited) is replaced, at first. */
export const SPARE_REFILL_MS = 1_000;
/**
 * The longest pause, after failures in a row. A spare that waited this long before it died was
 * a good start: the next failure begins again at `SPARE_REFILL_MS`.
 */
export const SPARE_REFILL_MAX_MS = 60_000;

export class Spares<Spec extends WorkloadSpec, R extends SpareReplica<Spec>> {
  readonly #waiting: R[] = [];
  #starting = 0;
  #closed = false;
  /** Spares that failed in a row (to start, or while they waited): the pause doubles with each. */
  #failures = 0;
  /** The refill after a failure's pause, while one is due: no spare is started before it. */
  #retry: ReturnType<typeof setTimeout> | undefined;
  /** When each spare was ready and began to wait. */
  readonly #readyAt = new WeakMap<R, number>();

  /**
   * `root` holds the slots; it is emptied first (slots of a host that crashed). `make` creates
   * the (not yet started) replica of a slot.
   */
  constructor(
    private readonly root: string,
    private readonly size: number,
    private readonly make: (slot: string) => R,
  ) {
    rmSync(root, { recursive: true, force: true });
    mkdirSync(root, { recursive: true });
    // Without it an app's `main.js` would take the "type" of a package.json above home.
    writeFileSync(join(root, "package.json"), '{ "private": true }\n');
  }

  /** Pids of the spares waiting now (for metrics and tests). */
  pids(): number[] {
    return this.#waiting.flatMap((r) => (r.pid === undefined ? [] : [r.pid]));
  }

  /** Starts spares until `size` are waiting or starting (not during a failure's pause). */
  fill(): void {
    if (this.#retry) return;
    while (!this.#closed && this.#waiting.length + this.#starting < this.size) {
      const spare = this.#spare();
      this.#starting++;
      spare.startSpare().then(
        () => {
          this.#starting--;
          if (this.#closed) void spare.stop();
          else {
            this.#readyAt.set(spare, Date.now());
            this.#waiting.push(spare);
          }
        },
        (err: Error) => {
          this.#starting--;
          this.#failed(`could not start: ${err.message}`);
        },
      );
    }
  }

  /** A replica of `spec`: a waiting spare when there is one, else a process started now. */
  replicaFor(spec: Spec): R {
    const waiting = this.#waiting.shift();
    if (waiting) this.#good();
    const replica = (waiting ?? this.#spare()).assign(spec);
    // Refilled once this cold start is over: on two cores a spare starting meanwhile (a
    // sandbox, its network, node) would slow the start it is there to spare.
    const refill = () => this.fill();
    replica.start().then(refill, refill);
    return replica;
  }

  /** Stops the waiting spares. */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#retry);
    await Promise.all(this.#waiting.splice(0).map((r) => r.stop()));
  }

  #spare(): R {
    const slot = join(this.root, randomBytes(6).toString("hex"));
    mkdirSync(slot);
    const spare = this.make(slot);
    spare.onExit(() => {
      const at = this.#waiting.indexOf(spare);
      rmSync(slot, { recursive: true, force: true });
      if (at < 0) return;
      this.#waiting.splice(at, 1);
      // A spare that died waiting (killed, the OOM killer) is replaced now, not at the next cold
      // start, which would pay for a start; after a pause, so spares that die at once do not spin.
      const readyAt = this.#readyAt.get(spare);
      if (readyAt !== undefined && Date.now() - readyAt >= SPARE_REFILL_MAX_MS) this.#good();
      this.#failed("exited while it waited");
    });
    return spare;
  }

  /**
   * A spare failed: the next is started after a pause, 1 s doubling to a minute with each failure
   * in a row, the step said once (two spares failing together are one step). Until 2026-11-27 a
   * spare that died at once was started again every second for as long as the host ran, and one
   * whose start failed was said once and not started again until a cold start.
   */
  #failed(why: string): void {
    if (this.#closed || this.#retry) return;
    const pause = Math.min(SPARE_REFILL_MS * 2 ** this.#failures, SPARE_REFILL_MAX_MS);
    this.#failures++;
    console.error(
      `runtime host: a spare replica ${why}; ${this.#failures > 1 ? `${this.#failures} failures in a row, ` : ""}the next starts in ${pause / 1000} s`,
    );
    this.#retry = setTimeout(() => {
      this.#retry = undefined;
      this.fill();
    }, pause);
    this.#retry.unref();
  }

  /** A spare served, or waited long: the pauses begin again at 1 s. */
  #good(): void {
    if (this.#failures > 0) console.error("runtime host: spare replicas start again");
    this.#failures = 0;
  }
}
