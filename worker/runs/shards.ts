/**
 * Where a run lives: each app's runs are spread over `SHARDS` Durable Objects, named
 * `{project}/{app}/{k}`, and a run id carries its shard `k` in its last character, so reading a
 * run goes straight to its shard. A later change of `SHARDS` keeps every existing id readable:
 * the id names its shard, it is not computed from the count.
 */
import { newId } from "../../common/ids.ts";
import type { Env } from "../env.ts";
import { SHARDS } from "./limits.ts";
import type { RunShard } from "./shard.ts";

const CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz";

/** A new run id (`newId("run")`) whose last character names a random shard of its app. */
export function newRunId(): string {
  const [byte] = crypto.getRandomValues(new Uint8Array(1));
  return newRunIdIn(byte as number);
}

/** A new run id in shard `n % SHARDS` (an idempotency key's hash picks it). */
export function newRunIdIn(n: number): string {
  return newId("run").slice(0, -1) + CROCKFORD[n % SHARDS];
}

/** The shard a run id names. */
export function shardOf(runId: string): number {
  return CROCKFORD.indexOf(runId.at(-1) ?? "0");
}

export function shardName(project: string, app: string, shard: number): string {
  return `${project}/${app}/${shard}`;
}

function namespace(env: Env): DurableObjectNamespace<RunShard> {
  return env.RUNS as unknown as DurableObjectNamespace<RunShard>;
}

/** The shard that holds (or will hold) `runId` of `project`/`app`. */
export function shardFor(env: Env, project: string, app: string, runId: string) {
  const ns = namespace(env);
  return ns.get(ns.idFromName(shardName(project, app, shardOf(runId))));
}

/**
 * The shard an existing run id may be in, or undefined when its id names none (a sync run
 * without a webhook made before shards): asking would create an object for nothing.
 */
export function existingShardFor(env: Env, project: string, app: string, runId: string) {
  const k = shardOf(runId);
  return k >= 0 && k < SHARDS ? shardFor(env, project, app, runId) : undefined;
}

/** Every shard of an app (to wake them all). */
export function shardsOf(env: Env, project: string, app: string) {
  const ns = namespace(env);
  return Array.from({ length: SHARDS }, (_, k) =>
    ns.get(ns.idFromName(shardName(project, app, k))),
  );
}
