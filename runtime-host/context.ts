import type { AppVersions } from "./app-versions.ts";
import type { AppRegistry } from "./apps.ts";
import type { AsyncRuns } from "./async-runs.ts";
import type { Intake } from "./intake.ts";
import type { HostLimits } from "./limits.ts";
import type { ReplicaPool } from "./pool/pool.ts";
import type { ManagedReplica } from "./pool/replica.ts";
import type { ReplicaOutputs } from "./pool/replica-output.ts";
import type { RunLogStore } from "./pool/run-logs.ts";
import type { Spares } from "./pool/spares.ts";
import type { Trials } from "./pool/trials.ts";
import type { WorkloadSpec } from "./pool/workload.ts";
import type { RunReports } from "./run-reports.ts";
import type { CustomReplica, CustomSpec } from "./runtimes/custom/replica.ts";

/** What every route of the host works with. */
export interface HostContext {
  registry: AppRegistry;
  /** Which version of each app runs here, fetched from the control plane when needed. */
  versions: AppVersions;
  pool: ReplicaPool;
  /** Replicas of versions started before they are current: a deploy's trial. */
  trials: Trials;
  /** Everything each app's replicas wrote, now and of the last few that ended. */
  outputs: ReplicaOutputs;
  limits: HostLimits;
  runs: AsyncRuns;
  spares: HostSpares;
  reports: RunReports;
  /** Whether new work is taken (refused with 503 once the host stops), and what is in flight. */
  intake: Intake;
  /** The logs of its managed apps' runs, in memory and on its disk. */
  runLogs: RunLogStore;
}

/** Spare processes of each runtime. */
export interface HostSpares {
  managed: Spares<WorkloadSpec, ManagedReplica>;
  custom: Spares<CustomSpec, CustomReplica>;
}
