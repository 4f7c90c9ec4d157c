import type { RunObject } from "./run-object.ts";

/** Bindings of the Worker (wrangler.toml). */
export interface Env {
  /** Management API: JWKS and app resolution. */
  CONTROL_PLANE_URL: string;
  /** The runtime host that runs the apps (one host for now; many later, chosen per app). */
  RUNTIME_HOST_URL: string;
  /** Shared among Runlet's own components; never sent to callers. A secret in production. */
  INTERNAL_TOKEN: string;
  RUNS: DurableObjectNamespace<RunObject>;
}

export type WorkerEnv = { Bindings: Env };
