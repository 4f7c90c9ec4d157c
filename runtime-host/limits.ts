/** Every limit of the runtime host in one place; tests shorten the timing ones via `HostLimits`. */

import { DEFAULT_START_TIMEOUT_S, MAX_BUNDLE_BYTES } from "../common/app-limits.ts";

const MiB = 1024 * 1024;

/** Largest app bundle, counted after base64 decoding (the control plane's limit too). */
export { MAX_BUNDLE_BYTES };

/**
 * Largest deploy request body. Base64 inflates a bundle by 4/3 and the JSON around the files adds
 * a little, so this is the control plane's own request limit: a bundle it accepts always fits.
 */
export const MAX_DEPLOY_BODY_BYTES = Math.ceil(MAX_BUNDLE_BYTES * 1.4);

/** Largest invoke body: the caller's JSON, as the Worker's run route accepts it. */
export const MAX_INVOKE_BODY_BYTES = 10 * MiB;

/** Bytes of stdout + stderr kept per replica (the newest ones). */
export const LOG_RING_BYTES = 256 * 1024;

/**
 * Pieces of output a replica's ring holds at most, whatever their bytes: each costs the host
 * about 200 bytes beside its text, so a ring of one-byte writes held some 50 MB, not 256 KiB.
 */
export const LOG_RING_CHUNKS = 4096;

/**
 * The logs of runs (`GET /internal/runs/{runId}/logs`), kept in the host's memory and in files
 * under `{home}/host/run-logs/` (pool/run-log-files.ts): per run the newest `bytesPerRun` bytes
 * of text and at most `linesPerRun` lines (older lines are dropped and the run is marked
 * `truncated`), for the latest `runs` runs (the oldest run's log goes first), and at most
 * `diskBytes` of files (the oldest runs' go first). A line costs the host about 75 bytes beside
 * its text: without the line bound, a run of empty lines held 65,536 of them (4.9 MB measured)
 * in its "64 KiB". At most about (64 KiB + 2,000 × 75 B) × 500 = 105 MB of memory in all, 32
 * MiB for lines of 32 bytes or more. A run's file is rewritten with what it keeps once it would
 * pass 4 × 64 KiB (or twice its last rewrite): 500 runs that wrote much fill about 128 MiB.
 */
export const RUN_LOG_LIMITS = {
  bytesPerRun: 64 * 1024,
  linesPerRun: 2_000,
  runs: 500,
  diskBytes: 128 * MiB,
} as const;

export interface HostLimits {
  /**
   * Longest a synchronous call may run: 5 minutes. Past it the caller gets 504 and the replica is
   * killed (a stuck function would otherwise hold it forever). Longer work belongs in async runs.
   */
  callTimeoutMs: number;
  /**
   * Longest a replica may take to be ready (its module imported, its server healthy) before the
   * call fails with 502, unless its app's `start_timeout` says otherwise; a spare's start too.
   */
  startTimeoutMs: number;
  /**
   * Between two spaces a deploy's trial writes before its answer while the replica starts: a
   * client's wait for the next bytes (Node's fetch: 300 s) must not end a start of 30 minutes.
   */
  trialKeepAliveMs: number;
  /** Time between SIGTERM and SIGKILL when a replica is stopped. */
  stopGraceMs: number;
  /**
   * Longest a synchronous call waits for a free replica slot when its app is at `max_replicas`,
   * all busy: 30 s, then 429. An async run waits as long as it takes: the Worker holds the runs
   * queued and hands each one over as the app can take it.
   */
  queueWaitMs: number;
  /**
   * Most calls and async runs waiting for a slot of one app at once: 10,000; one more is refused
   * at once with 429. Generous: a wait is bounded by time (`queueWaitMs`), this bounds memory.
   */
  maxWaiting: number;
  /** Spare managed-runtime processes kept started, so a cold start skips starting node. */
  spares: number;
  /**
   * How long a host told to stop (SIGTERM, SIGINT) lets sync calls in flight and running async
   * runs end: 10 s. New work is refused meanwhile; async runs still running then end `failure`.
   */
  shutdownGraceMs: number;
  /**
   * Replicas that ended whose output the host keeps for `runlet logs --app`, over all its apps:
   * 100, at most 25 MiB of rings (and at most the last 3 per app). Without it the host kept 3 per
   * app it ever ran: 150 apps writing 300 KB a call held 135 MB of buffers once each had stopped
   * 3 times or more (41 MB with it).
   */
  endedOutputs: number;
}

export const DEFAULT_LIMITS: HostLimits = {
  callTimeoutMs: 5 * 60_000,
  startTimeoutMs: DEFAULT_START_TIMEOUT_S * 1000, // an app's start_timeout unless it sets one
  trialKeepAliveMs: 30_000,
  stopGraceMs: 2_000,
  queueWaitMs: 30_000,
  maxWaiting: 10_000,
  spares: 2,
  shutdownGraceMs: 10_000,
  endedOutputs: 100,
};
