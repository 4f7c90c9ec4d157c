/**
 * The Worker's word that it could not connect to a host at its registered address (docs/hosts.md,
 * "Placement"): a wrong `--address`, a firewall. The host still heartbeats, so it stayed `up`
 * while about one call in fifty to its apps failed 502, and nothing told the operator. Now the
 * Worker says so (`POST /internal/hosts/{id}/unreachable`), the registry lists the host
 * unreachable with when and the error, and placement passes it over for `UNREACHABLE_MS`, or
 * until the host registers again.
 */
import { and, eq, lte } from "drizzle-orm";
import { type HostState, UNREACHABLE_MS } from "../../common/protocol/hosts.ts";
import type { Database } from "../db/index.ts";
import { hosts } from "../db/schema.ts";

/**
 * Notes that the Worker could not connect to host `id` in a check begun at `checkedAt`, unless
 * the host registered since: a host killed and restarted at once (by `runlet start`) would
 * otherwise be passed over for a minute by a report that came in after its new registration.
 * False if the registry has no such host.
 */
export async function markUnreachable(
  db: Database,
  id: string,
  error: string,
  checkedAt = Date.now(),
): Promise<boolean> {
  const [host] = await db.select({ id: hosts.id }).from(hosts).where(eq(hosts.id, id));
  if (!host) return false;
  await db
    .update(hosts)
    .set({ unreachableAt: Date.now(), unreachableError: error })
    .where(and(eq(hosts.id, id), lte(hosts.registeredAt, checkedAt)));
  return true;
}

/**
 * `{unreachable}` while the report is recent and the host would take work (up or draining), else
 * nothing: a host down or stopped says more by its state.
 */
export function unreachableNow(
  row: { unreachableAt: number | null; unreachableError: string | null },
  state: HostState,
  now: number,
): { unreachable?: { at: number; error: string } } {
  const at = row.unreachableAt;
  if (at === null || now - at >= UNREACHABLE_MS || state === "down" || state === "stopped")
    return {};
  return { unreachable: { at, error: row.unreachableError ?? "" } };
}
