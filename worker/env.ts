import type { RunletClaims } from "../common/jwt.ts";

/** Bindings of the Worker (wrangler.toml). */
export interface Env {
  /** Management API: JWKS and app resolution. */
  CONTROL_PLANE_URL: string;
  /**
   * The control plane's Worker, when it runs on Workers too (a service binding): requests to
   * the control plane go there rather than over the network (worker/control-plane.ts).
   */
  CONTROL_PLANE?: Fetcher;
  /** The runtime host that runs the apps (one host for now; many later, chosen per app). */
  RUNTIME_HOST_URL: string;
  /**
   * The Worker's own address as the runtime hosts reach it: their callbacks (with the internal
   * token) go there. Never taken from a request, whose Host header its caller chooses.
   */
  WORKER_URL: string;
  /** Shared among Runlet's own components; never sent to callers. A secret in production. */
  INTERNAL_TOKEN: string;
  /** The run store: `RunShard` objects, a few per app (typed where used: runs/shards.ts). */
  RUNS: DurableObjectNamespace;
  /** "1": webhooks may target private, loopback and link-local addresses (local use). */
  RUNLET_WEBHOOK_ALLOW_PRIVATE?: string;
  /** The brand in the webhook headers' names (`X-{brand}-Webhook-…`); "Runlet" by default. */
  RUNLET_BRAND?: string;
  /** For tests: the pauses between delivery attempts ("ms,ms"), each attempt's timeout, the
   * watchdog's interval and the longest wait for a host's answer, shorter than the real ones. */
  WEBHOOK_RETRY_DELAYS_MS?: string;
  WEBHOOK_TIMEOUT_MS?: string;
  RUN_WATCHDOG_MS?: string;
  HOST_ANSWER_MS?: string;
  /** Between two health checks of a host that holds a call unanswered (worker/host-probe.ts). */
  HOST_PROBE_MS?: string;
  /** Tests only: how long a call waits for the control plane's answer (worker/auth.ts). */
  CONTROL_PLANE_PATIENCE_MS?: string;
  /** Tests only: how long the control plane's answer about a token and an app is kept (10 s). */
  AUTH_CACHE_MS?: string;
}

/** Where the runtime hosts send their callbacks: `WORKER_URL`'s origin. */
export function workerOrigin(env: Env): string {
  return new URL(env.WORKER_URL).origin;
}

/** A caller whose token verified: the token (for the control plane's questions) and its claims. */
export interface Caller {
  token: string;
  claims: RunletClaims;
}

export interface ResolvedApp {
  id: string;
  name: string;
  runtime: "managed" | "custom";
  version: number;
  /**
   * `capacity`: calls the app runs at once (`max_replicas × replica_concurrency`);
   * `replicaConcurrency`: calls one replica runs at once.
   */
  scaling: { capacity: number; replicaConcurrency: number };
  /** Seconds an async run may wait in the app's queue. */
  queueTimeout: number;
  /** Seconds a replica of it may take to start (`start_timeout`); absent from older control planes. */
  startTimeout?: number;
  /** A managed app's functions, as its start check found them; null or absent: not known. */
  functions?: string[] | null;
}

export type WorkerEnv = {
  Bindings: Env;
  Variables: {
    /** The run the request is about (middleware/run-id.ts). */
    runId?: string;
    /** The verified caller and the app of the path (middleware/caller.ts). */
    caller: Caller;
    app: ResolvedApp;
    /**
     * A read of a run (`GET …/runs/{run_id}`) whose app is no longer deployed: the message of
     * the 404 it got instead of `app`, which the read answers unless the runs index has the run.
     */
    appGone?: string;
  };
};
