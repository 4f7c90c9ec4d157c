/**
 * An operator's drain of a host (docs/hosts.md, "Draining a host"): the Worker sends it no new
 * work, the control plane starts no deploy's trial there and grants it no replica, and each
 * heartbeat's answer tells it to keep none, so it retires its replicas as their calls end. Its
 * heartbeats and its registering again (a crash, a restart) do not undo it; a resume does, and so
 * does its graceful stop (`stopped`: it registers `up` when it starts again).
 */
import { and, eq, gt, ne } from "drizzle-orm";
import { DOWN_AFTER_MS, type HostState } from "../../common/protocol/hosts.ts";
import type { Database } from "../db/index.ts";
import { hosts } from "../db/schema.ts";
import { listHosts } from "./registry.ts";

/** What a drain or a resume found: done, or the host's state that refused it; undefined: no host. */
export type DrainAnswer = { done: true } | { done: false; state: HostState } | undefined;

/** Drains host `id` unless it is stopped (it runs nothing, and registers `up` when it starts). */
export async function drainHost(db: Database, id: string): Promise<DrainAnswer> {
  const drained = await db
    .update(hosts)
    .set({ state: "drained" })
    .where(and(eq(hosts.id, id), ne(hosts.state, "stopped")))
    .returning({ id: hosts.id });
  return drained.length > 0 ? { done: true } : refusal(db, id);
}

/**
 * Ends the drain of host `id`: it takes work again (a host that is `up` already: done too). Not
 * one that is down (silent for `DOWN_AFTER_MS`): it is listed `down`, and refused as such.
 */
export async function resumeHost(db: Database, id: string): Promise<DrainAnswer> {
  const resumed = await db
    .update(hosts)
    .set({ state: "up" })
    .where(
      and(
        eq(hosts.id, id),
        eq(hosts.state, "drained"),
        gt(hosts.seenAt, Date.now() - DOWN_AFTER_MS),
      ),
    )
    .returning({ id: hosts.id });
  if (resumed.length > 0) return { done: true };
  const answer = await refusal(db, id);
  return answer && !answer.done && answer.state === "up" ? { done: true } : answer;
}

async function refusal(db: Database, id: string): Promise<DrainAnswer> {
  const host = (await listHosts(db)).find((h) => h.id === id);
  return host && { done: false, state: host.state };
}
