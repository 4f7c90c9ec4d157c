import type { AppRegistry } from "./apps.ts";
import type { AsyncRuns } from "./async-runs.ts";
import type { HostLimits } from "./limits.ts";
import type { ReplicaPool } from "./pool/pool.ts";
import type { Spares } from "./pool/spares.ts";

/** What every route of the host works with. */
export interface HostContext {
  registry: AppRegistry;
  pool: ReplicaPool;
  limits: HostLimits;
  runs: AsyncRuns;
  spares: Spares;
}
