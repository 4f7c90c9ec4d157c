/**
 * Spare replica processes, each in a folder of its own (a "slot"), started before any app is
 * known and waiting for one: for the managed runtime node and the shim, for the custom runtime
 * the sandbox with a shell that will exec the entrypoint. A cold start takes one, copies the
 * app's files into its slot and starts the app there — it does not pay for starting a process
 * (or a sandbox). The pool refills itself in the background; when it is empty a new process is
 * started on the spot.
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

/** The pause before a spare that died waiting is replaced. */
const SPARE_REFILL_MS = 1_000;

export class Spares<Spec extends WorkloadSpec, R extends SpareReplica<Spec>> {
  readonly #waiting: R[] = [];
  #starting = 0;
  #closed = false;
  #warned = false;

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

  /** Starts spares until `size` are waiting or starting. */
  fill(): void {
    while (!this.#closed && this.#waiting.length + this.#starting < this.size) {
      const spare = this.#spare();
      this.#starting++;
      spare.startSpare().then(
        () => {
          this.#starting--;
          if (this.#closed) void spare.stop();
          else this.#waiting.push(spare);
        },
        (err: Error) => {
          this.#starting--;
          // A spare that cannot start would fail the same way again: do not spin on it.
          if (!this.#warned && !this.#closed)
            console.error(`runtime host: spare replicas unavailable: ${err.message}`);
          this.#warned = true;
        },
      );
    }
  }

  /** A replica of `spec`: a waiting spare when there is one, else a process started now. */
  replicaFor(spec: Spec): R {
    const replica = (this.#waiting.shift() ?? this.#spare()).assign(spec);
    // Refilled once this cold start is over: on two cores a spare starting meanwhile (a
    // sandbox, its network, node) would slow the start it is there to spare.
    const refill = () => this.fill();
    replica.start().then(refill, refill);
    return replica;
  }

  /** Stops the waiting spares. */
  async close(): Promise<void> {
    this.#closed = true;
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
      if (!this.#closed) setTimeout(() => this.fill(), SPARE_REFILL_MS).unref();
    });
    return spare;
  }
}
