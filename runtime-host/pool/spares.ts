/**
 * Spare managed-runtime processes: node and the shim already started, each in a folder of its
 * own (a "slot"), waiting for an app. A cold start takes one, copies the app's files into its
 * slot and loads them — it does not pay for starting a process. The pool refills itself in the
 * background; when it is empty a new process is started on the spot.
 */
import { randomBytes } from "node:crypto";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ManagedReplica, type ReplicaOptions } from "./replica.ts";
import type { WorkloadSpec } from "./workload.ts";

export class Spares {
  readonly #waiting: ManagedReplica[] = [];
  #starting = 0;
  #closed = false;
  #warned = false;

  /** `root` holds the slots; it is emptied first (slots of a host that crashed). */
  constructor(
    private readonly root: string,
    private readonly size: number,
    private readonly options: ReplicaOptions,
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
  replicaFor(spec: WorkloadSpec): ManagedReplica {
    const spare = this.#waiting.shift() ?? this.#spare();
    this.fill();
    return spare.assign(spec);
  }

  /** Stops the waiting spares. */
  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all(this.#waiting.splice(0).map((r) => r.stop()));
  }

  #spare(): ManagedReplica {
    const slot = join(this.root, randomBytes(6).toString("hex"));
    mkdirSync(slot);
    const spare = new ManagedReplica(
      { project: "", app: "", version: 0, dir: slot, env: { RUNLET_SPARE: "1" } },
      this.options,
    );
    spare.onExit(() => {
      const at = this.#waiting.indexOf(spare);
      if (at >= 0) this.#waiting.splice(at, 1);
      rmSync(slot, { recursive: true, force: true });
    });
    return spare;
  }
}
