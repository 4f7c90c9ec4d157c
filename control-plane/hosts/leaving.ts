/**
 * Hosts leaving the registry (docs/hosts.md, "A host that stops, a host removed"): a host that
 * stops gracefully says so and is `stopped`; an operator removes a host that is down or stopped.
 * Either way the places it held of each app's `max_replicas` are free at once. The same code on
 * libSQL and D1: each change is one batch.
 */
import { and, eq, inArray, lte, or, type SQL } from "drizzle-orm";
import { DOWN_AFTER_MS } from "../../common/protocol/hosts.ts";
import type { Database } from "../db/index.ts";
import { hostApps, hosts } from "../db/schema.ts";

/**
 * Host `id` stopped gracefully: its work ended and its replicas stopped. It is `stopped` (not
 * `down`, however long it stays silent) and holds no replica of any app. It registers again if it
 * starts again.
 */
export async function leaveHost(db: Database, id: string): Promise<void> {
  await db.batch([
    db
      .update(hosts)
      .set({ state: "stopped", seenAt: Date.now(), busy: 0, queued: 0 })
      .where(eq(hosts.id, id)),
    db.delete(hostApps).where(eq(hostApps.hostId, id)),
  ]);
}

/** Why host `id` cannot be removed now, or that it was removed, or that there is no such host. */
export type Removal =
  | { removed: true }
  | { removed: false; state: "up" | "draining" | "drained"; seenAt: number }
  | undefined;

/**
 * Removes host `id` from the registry if it is down or stopped, with what it ran. A host that is
 * up, draining or drained (heard from within `DOWN_AFTER_MS`) stays: removed, it would register again at
 * its next heartbeat. The check and the delete are one batch, so a host heard from in between
 * stays too. Undefined: no such host.
 */
export async function removeHost(db: Database, id: string): Promise<Removal> {
  const silentSince = Date.now() - DOWN_AFTER_MS;
  const removable = (): SQL =>
    and(eq(hosts.id, id), or(eq(hosts.state, "stopped"), lte(hosts.seenAt, silentSince))) as SQL;
  const [, removed] = (await db.batch([
    db
      .delete(hostApps)
      .where(inArray(hostApps.hostId, db.select({ id: hosts.id }).from(hosts).where(removable()))),
    db.delete(hosts).where(removable()).returning({ id: hosts.id }),
  ])) as unknown[][];
  if (removed?.length) return { removed: true };
  const [row] = await db
    .select({ state: hosts.state, seenAt: hosts.seenAt })
    .from(hosts)
    .where(eq(hosts.id, id));
  if (!row) return undefined;
  return { removed: false, state: row.state === "stopped" ? "up" : row.state, seenAt: row.seenAt };
}
