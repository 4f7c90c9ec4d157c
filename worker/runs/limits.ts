/** The run store's sizes, which both the shard and the id → shard naming need. */

/** Shards per app: a shard is one object, whose requests run one at a time. */
export const SHARDS = 4;

/** Runs an app may have waiting in its queue, over all its shards; past it a submission is 429. */
export const MAX_QUEUED_RUNS = 100_000;
