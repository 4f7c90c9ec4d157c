/**
 * The internal paths, built here and nowhere else: each component's `/internal/*` routes, which
 * only Runlet's own components call, with the internal token. A receiver's route pattern sits
 * beside its builder where the receiver is a Hono app.
 */

const name = encodeURIComponent;

/** The runtime host's routes (runtime-host/router.ts). */
export const hostPath = {
  /** PUT: deploy a version; DELETE: remove the app. */
  app: (project: string, app: string) => `/internal/apps/${project}/${app}`,
  /** POST: start a replica of a version before it is current (`TrialRequest` → `TrialAnswer`). */
  trial: (project: string, app: string) => `/internal/apps/${project}/${app}/trial`,
  /** PUT: the app's current version is now this one (`CurrentVersion`): fetch it when needed. */
  current: (project: string, app: string) => `/internal/apps/${project}/${app}/current`,
  /** POST: one synchronous call of a managed app's function. */
  invoke: (project: string, app: string, fn: string) =>
    `/internal/invoke/${project}/${app}/${name(fn)}`,
  /** Any method: one request to a custom app, `pathAndQuery` being the path after the app. */
  http: (project: string, app: string, pathAndQuery: string) =>
    `/internal/http/${project}/${app}${pathAndQuery}`,
  /** POST: hand over an async run of a function. */
  async: (project: string, app: string, fn: string) =>
    `/internal/async/${project}/${app}/${name(fn)}`,
  /** Any method: hand over an async run of a custom app's request. */
  asyncHttp: (project: string, app: string, pathAndQuery: string) =>
    `/internal/async-http/${project}/${app}${pathAndQuery}`,
  /** GET: a run's state (`HostRun`); DELETE: cancel it. */
  run: (runId: string) => `/internal/runs/${name(runId)}`,
  /** GET: what the run wrote (`RunLogs`), if it is `project`'s; whole lines past `after` only. */
  runLogs: (runId: string, project: string, after = 0) =>
    `/internal/runs/${name(runId)}/logs?${new URLSearchParams({ project, ...(after > 0 ? { after: String(after) } : {}) })}`,
  /** GET: everything the app's replicas wrote, as a container log (`ReplicaOutput`). */
  output: (project: string, app: string) => `/internal/apps/${project}/${app}/output`,
  /** GET: every app's replicas and queue (`HostMetrics`). */
  metrics: "/internal/metrics",
  /**
   * PUT: the project's secrets changed, now at this revision (`SecretsRevision`): its replicas
   * that read an earlier one are replaced.
   */
  secrets: (project: string) => `/internal/projects/${project}/secrets`,
} as const;

/** The Worker's routes (worker/index.ts). */
export const workerPath = {
  /** POST: the host's callback with an async run's end (`HostRun`). */
  runEnd: (project: string, app: string, runId: string) =>
    `/internal/apps/${project}/${app}/runs/${runId}/complete`,
  /** POST: wake every shard once the stack (re)started. */
  wake: "/internal/wake",
} as const;

/** The control plane's routes (control-plane/routes/internal-*.ts). */
export const controlPlanePath = {
  /** POST: many run reports (`RunReportBatch`). */
  runs: "/internal/runs",
  /** PUT: one run's report (`RunReport`). */
  run: (runId: string) => `/internal/runs/${runId}`,
  /** GET: every deployed app (`AppList`). */
  apps: "/internal/apps",
  /**
   * POST with a host token: register (`Registration`); `/{hostId}/heartbeat` (`Heartbeat`),
   * `/{hostId}/replicas` (`ReplicaRequest`), `/{hostId}/leave` (no body: it stopped
   * gracefully). GET with the internal token: `Placement`.
   */
  hosts: "/internal/hosts",
  /** POST with the internal token: the Worker could not connect to the host (`UnreachableReport`). */
  unreachable: (hostId: string) => `/internal/hosts/${hostId}/unreachable`,
  /** GET with a host token: the app's current version (`CurrentVersion`). */
  current: (project: string, app: string) => `/internal/bundles/${project}/${app}`,
  /** GET with a host token: a project's secrets, as its apps' environment, and their revision (`{env, revision}`). */
  secrets: (project: string) => `/internal/secrets/${project}`,
  /** GET with a host token: a version's bundle (`DeployRequest`, as JSON). */
  bundle: (project: string, app: string, version: number) =>
    `/internal/bundles/${project}/${app}/${version}`,
} as const;
