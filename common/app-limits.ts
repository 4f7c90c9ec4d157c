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
