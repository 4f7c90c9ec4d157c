/** For the pool's tests: a replica without a process, and a deployment for it. */

import { configOf } from "../test-support.ts";
import { LogRing } from "./log-ring.ts";
import type { PoolTarget } from "./pool.ts";
import type { ExitStatus } from "./replica-process.ts";
import type { CallOutcome, FunctionWorkload, WorkloadSpec } from "./workload.ts";

/** Version 1 of app `a` of project `p`, nothing on disk, with `scaling` over one call a replica. */
export const fakeTarget = (scaling: Record<string, number> = {}): PoolTarget => ({
  project: "p",
  app: "a",
  version: 1,
  dir: "/nonexistent",
  digest: "1",
  config: configOf("a", { scaling: { replica_concurrency: 1, cooldown: 600, ...scaling } }),
});

let nextPid = 1000;

/**
 * A replica that starts as `starting` says (at once by default) and runs each call until the
 * test ends it (the tests run calls through `use()`, not `invoke()`).
 */
export class FakeReplica implements FunctionWorkload {
  readonly kind = "function";
  /** The functions its module exports, as the shim says once it is ready. */
  exports: string[] = ["run"];
  readonly pid = nextPid++;
  readonly logs = new LogRing(1024);
  exited = false;
  exitStatus: ExitStatus | undefined;
  accepting = true;
  /** As `spec.secrets` said, once it started. */
  secretsRevision: number | undefined;
  #onExit: Array<() => void> = [];
  constructor(
    readonly spec: WorkloadSpec,
    private readonly starting: () => Promise<void> = () => Promise.resolve(),
  ) {}
  start(): Promise<void> {
    const { secrets } = this.spec;
    if (!secrets) return this.starting();
    return secrets().then((read) => {
      this.secretsRevision = read.revision;
      return this.starting();
    });
  }
  invoke(): Promise<CallOutcome> {
    return new Promise(() => {});
  }
  stop(): Promise<void> {
    if (!this.exited) {
      this.exited = true;
      this.exitStatus = { code: null, signal: "SIGTERM" };
      this.accepting = false;
      queueMicrotask(() => {
        for (const listener of this.#onExit) listener();
      });
    }
    return Promise.resolve();
  }
  onExit(listener: () => void): void {
    this.#onExit.push(listener);
  }
}
