// The bindings of the `control-plane-d1` vitest project (vitest.config.ts).
/// <reference types="@cloudflare/vitest-pool-workers" />
import type { ControlPlaneEnv } from "../worker.ts";

declare module "cloudflare:test" {
  interface ProvidedEnv extends ControlPlaneEnv {
    TEST_MIGRATIONS: D1Migration[];
    /** An empty database for the first-user cases (vitest.config.ts). */
    FIRST_USER_DB: D1Database;
    /** A bucket for the sweeps of stray bundles (vitest.config.ts). */
    SWEPT_BUNDLES: R2Bucket;
  }
}
