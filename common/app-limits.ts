/**
 * The bounds and defaults of runlet.toml's limits (common/app-config.ts checks them). Imports
 * nothing: the Worker reads them without bundling the config's schema (zod).
 */

/** Upper bound of `response_grace_period`: the spec's 12-hour maximum async run. */
export const MAX_GRACE_PERIOD_S = 12 * 60 * 60;

/** How long an accepted async run may wait for a replica by default (`queue_timeout`): 24 h. */
export const DEFAULT_QUEUE_TIMEOUT_S = 24 * 60 * 60;
/** Upper bound of `queue_timeout`: a run's record is kept 7 days, so it cannot wait longer. */
export const MAX_QUEUE_TIMEOUT_S = 7 * 24 * 60 * 60;

/**
 * How long a replica may take to be ready by default (`start_timeout`): its module imported, or
 * its server answering its healthcheck. A config without the field has this limit: the runtime
 * host's own (`startTimeoutMs`), as before the field existed.
 */
export const DEFAULT_START_TIMEOUT_S = 30;
/**
 * Upper bound of `start_timeout`: 30 minutes, as long as a large model's load. A sync call that
 * finds the app cold waits for its start (docs/api.md, "Slow starts"), so it is bounded.
 */
export const MAX_START_TIMEOUT_S = 30 * 60;

/**
 * Largest app bundle, counted after base64 decoding: the control plane refuses more (413), the
 * runtime host too, and `runlet deploy` before it uploads.
 */
export const MAX_BUNDLE_BYTES = 20 * 1024 * 1024;

/**
 * Most files an app bundle may hold: the control plane refuses more (400), the runtime host too,
 * and `runlet deploy` before it packs the folder.
 */
export const MAX_BUNDLE_FILES = 5_000;

/**
 * The longest a host takes to answer a call of an app whose replicas may take `startTimeout`
 * seconds to start: its wait for a replica slot (30 s, counted from the app's first replica
 * ready: up to `startTimeout` more while it starts), the start of the replica it gets
 * (`startTimeout`) and the call's own limit (5 min), with a margin. A host silent past it is
 * wedged: the caller hears 504 instead of waiting for ever (`HOST_ANSWER_MS` sets it in the
 * Worker's tests). The runs index takes a sync run listed running past it with an app of the
 * longest start for lost (control-plane/runs/lost-sync.ts).
 * At a fixed 390 s, a call of an app whose start takes 10 minutes was cut while the host started it.
 */
// Without a startTimeout, the control plane is older than the field: the default it has now.
export const longestHostAnswerMs = (startTimeout = DEFAULT_START_TIMEOUT_S) =>
  (30 + 2 * startTimeout + 300 + 30) * 1000;
