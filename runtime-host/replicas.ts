/**
 * Where the host's replicas come from: spare processes of each runtime, each app's in a folder
 * of its own under `{home}/host/slots/`; a deploy's trials; and the pool over them. In a
 * registry, each new replica needs the control plane's grant (docs/hosts.md) and reads its
 * project's secrets as it starts.
 */
import { rmSync } from "node:fs";
import { join } from "node:path";
import { APP_ENV } from "../common/consts.ts";
import type { AppRegistry, Deployment } from "./apps.ts";
import type { HostSpares } from "./context.ts";
import type { HostOptions } from "./host-options.ts";
import type { HostLimits } from "./limits.ts";
import type { Membership } from "./membership.ts";
import { ReplicaGrants } from "./pool/grants.ts";
import { type PoolTarget, ReplicaPool } from "./pool/pool.ts";
import { ManagedReplica } from "./pool/replica.ts";
import { ReplicaOutputs } from "./pool/replica-output.ts";
import type { RunLogStore } from "./pool/run-logs.ts";
import { Spares } from "./pool/spares.ts";
import { Trials } from "./pool/trials.ts";
import { CustomReplica } from "./runtimes/custom/replica.ts";
import { managedLauncher } from "./runtimes/managed/launch.ts";
import { detectSandbox, type Sandbox } from "./sandbox/sandbox.ts";

export interface HostReplicas {
  sandbox: Sandbox;
  spares: HostSpares;
  outputs: ReplicaOutputs;
  trials: Trials;
  pool: ReplicaPool;
  /** What holds replicas (the pool, the spares, the trials' replicas): all stop at shutdown. */
  all: ReadonlyArray<{ close(): Promise<void> }>;
}

/** The machine's sandbox, found once per process (the check starts a process). */
let detected: Sandbox | undefined;

/**
 * Starts the spares. `membership`: the host's, once it has joined its registry (a replica
 * wanted before is refused, and reads no secrets).
 */
export function startReplicas(
  opts: Pick<HostOptions, "home" | "sandbox" | "join" | "slots">,
  limits: HostLimits,
  registry: AppRegistry,
  runLogs: RunLogStore,
  membership: () => Membership | undefined,
): HostReplicas {
  detected ??= opts.sandbox ? undefined : detectSandbox();
  const sandbox = opts.sandbox ?? (detected as Sandbox);
  const replicaOptions = {
    startTimeoutMs: limits.startTimeoutMs,
    stopGraceMs: limits.stopGraceMs,
    launch: managedLauncher(sandbox),
    sandbox,
    runLogs,
  };
  const slots = join(opts.home, "host", "slots");
  sandbox.reclaim(slots); // what a host that crashed left mounted there
  rmSync(slots, { recursive: true, force: true }); // of a host that crashed
  const spare = { project: "", app: "", version: 0 };
  const spares: HostSpares = {
    managed: new Spares(
      join(slots, "managed"),
      limits.spares,
      (dir) => new ManagedReplica({ ...spare, dir, env: { [APP_ENV.spare]: "1" } }, replicaOptions),
    ),
    custom: new Spares(
      join(slots, "custom"),
      limits.spares,
      (dir) => new CustomReplica({ ...spare, dir, config: {} }, replicaOptions),
    ),
  };
  spares.managed.fill();
  spares.custom.fill();
  const grants =
    opts.join &&
    new ReplicaGrants(async ({ project, app, version, config }, have) => {
      const member = membership();
      if (!member) return { granted: false, elsewhere: true, unasked: "the host has not joined" };
      return member.mayStart({
        project,
        app,
        version,
        maxReplicas: config.scaling.max_replicas,
        have,
      });
    });
  // A replica's environment holds its project's secrets (and their revision), read as it
  // starts. Its start is bounded by its app's start_timeout (the host's limit without one).
  const specOf = (target: PoolTarget) => ({
    ...target,
    secrets: async () => (await membership()?.secrets(target.project)) ?? { env: {} },
    startTimeout: target.config.start_timeout,
  });
  const outputs = new ReplicaOutputs(limits.endedOutputs);
  const replicaOf = (target: PoolTarget) =>
    outputs.track(
      target.config.runtime === "custom"
        ? spares.custom.replicaFor(specOf(target))
        : spares.managed.replicaFor(specOf(target)),
    );
  // A deploy's trial replica, once its version is current, is the pool's first new one of it.
  const trials = new Trials(replicaOf, (target) => {
    registry.unstage(target as Deployment).catch(() => {});
  });
  const pool = new ReplicaPool((target) => trials.claim(target) ?? replicaOf(target), {
    ...limits,
    grants,
    slots: opts.join?.slots ?? opts.slots,
  });
  return {
    sandbox,
    spares,
    outputs,
    trials,
    pool,
    all: [pool, spares.managed, spares.custom, trials],
  };
}
