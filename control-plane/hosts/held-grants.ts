/**
 * Replica grants while heartbeats are held in memory (a full disk: held-beats.ts). A grant is a
 * write; when the database cannot take it, or while the registry's truth is partly in memory,
 * the control plane counts the app's replicas over the hosts not down — a held heartbeat
 * standing for its host's rows — and keeps the grant in the asking host's held heartbeat, as
 * `grantReplica` keeps it in `host_apps`. The count and the grant are one synchronous step after
 * the reads, so two hosts asking at once cannot both take the last place. The host's next
 * heartbeat replaces the grant with what it runs, as a written one does.
 */
import { and, eq, or } from "drizzle-orm";
import {
  DOWN_AFTER_MS,
  type ReplicaAnswer,
  type ReplicaRequest,
} from "../../common/protocol/hosts.ts";
import type { Database } from "../db/index.ts";
import { hostApps, hosts } from "../db/schema.ts";
import { heldBeats, holdBeat } from "./held-beats.ts";

export async function grantHeld(
  db: Database,
  id: string,
  req: ReplicaRequest,
  err?: unknown,
): Promise<ReplicaAnswer> {
  const [stored, [host]] = await Promise.all([
    db
      .select({ row: hostApps, seenAt: hosts.seenAt })
      .from(hostApps)
      .innerJoin(hosts, eq(hosts.id, hostApps.hostId))
      .where(
        or(
          and(eq(hostApps.projectId, req.project), eq(hostApps.app, req.app)),
          eq(hostApps.hostId, id),
        ),
      ),
    db.select().from(hosts).where(eq(hosts.id, id)),
  ]);
  // From here on, no await: the count and the grant are one step.
  if (!heldBeats(db).has(id)) {
    if (!host) return { granted: false, replicas: 0 };
    const { state, seenAt, upSince, busy, queued } = host;
    const apps = stored.filter((s) => s.row.hostId === id).map((s) => ({ ...s.row }));
    holdBeat(db, id, { state, seenAt, upSince, busy, queued, apps }, err);
  }
  const held = heldBeats(db);
  const mine = held.get(id);
  if (!mine) return { granted: false, replicas: 0 };
  const isApp = (a: { projectId: string; app: string }) =>
    a.projectId === req.project && a.app === req.app;
  const row = mine.apps.find(isApp);
  // The host knows its own replicas better than its last heartbeat did.
  if (row && req.have !== undefined) row.replicas = req.have;
  const alive = Date.now() - DOWN_AFTER_MS;
  let replicas = 0;
  for (const s of stored)
    if (isApp(s.row) && !held.has(s.row.hostId) && s.seenAt > alive) replicas += s.row.replicas;
  for (const beat of held.values())
    if (beat.seenAt > alive) for (const a of beat.apps) if (isApp(a)) replicas += a.replicas;
  // An operator drained it: it keeps no replica (as the written grant's `NOT EXISTS`).
  if (replicas >= req.maxReplicas || mine.state === "drained" || host?.state === "drained")
    return { granted: false, replicas };
  if (row) {
    row.replicas++;
    row.version = req.version;
  } else {
    const { project: projectId, app, version } = req;
    mine.apps.push({ hostId: id, projectId, app, version, replicas: 1, ready: 0, busy: 0 });
  }
  return { granted: true, replicas: replicas + 1 };
}
