/** The run store's sizes, which both the shard and the id → shard naming need. */

/** Shards per app: a shard is one object, whose requests run one at a time. */
export const SHARDS = 4;

/**
 * The largest value the run store writes in its row: a Durable Object's SQLite value (and its
 * row) holds at most 2 MB. A larger body or delivery is kept in parts (parts.ts).
 */
export const MAX_VALUE_BYTES = 1_900_000;

/** Runs an app may have waiting in its queue, over all its shards; past it a submission is 429. */
export const MAX_QUEUED_RUNS = 100_000;
