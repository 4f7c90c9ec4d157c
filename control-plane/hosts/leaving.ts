/**
 * Hosts leaving the registry (docs/hosts.md, "A host that stops"): a host that
 * stops gracefully says so and is `stopped`, and the places it held of each app's `max_replicas`
 * are free at once. The same code on libSQL and D1: each change is one batch.
 */
import { eq } from "drizzle-orm";
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
