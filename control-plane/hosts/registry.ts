/**
 * The registry of runtime hosts (docs/hosts.md): registrations, the replicas each host was
 * granted, and the hosts as the Worker and the operator see them (host tokens are in tokens.ts,
 * heartbeats in heartbeat.ts). The same code on libSQL and D1: every change is one statement or
 * one batch.
 */
import { and, eq, inArray, lte, type SQL, sql } from "drizzle-orm";
import { newId } from "../../common/ids.ts";
import {
  type CurrentVersion,
  DOWN_AFTER_MS,
  type HostState,
  type PlacementHost,
  placementState,
  type Registration,
  type ReplicaAnswer,
  type ReplicaRequest,
} from "../../common/protocol/hosts.ts";
import type { Database } from "../db/index.ts";
import { insertIf } from "../db/insert-if.ts";
import { apps, deployments, hostApps, hosts } from "../db/schema.ts";
import { isDiskFull } from "../errors.ts";
import { hostRestarted } from "../runs/lost-sync.ts";
import { heldBeats, holdingBeats } from "./held-beats.ts";
import { grantHeld } from "./held-grants.ts";
import { addressFree, nameFree } from "./join-checks.ts";
import { liveToken, revokedMeanwhile } from "./tokens.ts";
import { unreachableNow } from "./unreachable.ts";

/**
 * A host registers (again): by its address, it keeps its id. What it ran before is forgotten:
 * a host that registers has just started, with no replica. One an operator drained stays
 * drained (a crash and a restart do not undo a drain; its graceful stop, `stopped`, does).
 */
export async function registerHost(
  db: Database,
  tokenId: string,
  reg: Registration,
): Promise<string> {
  await forgetHosts(db, FORGET_DOWN_MS); // `runlet start`'s extra hosts come back at new ports
  const now = Date.now();
  await addressFree(db, tokenId, reg.address, now);
  await nameFree(db, reg, now);
  const fields = {
    name: reg.name,
    tokenId,
    slots: reg.slots,
    memoryMb: reg.memoryMb,
    state: "up" as const,
    registeredAt: now,
    seenAt: now,
    upSince: now,
    // Registered again (restarted, perhaps at a corrected address): the Worker tries it again.
    unreachableAt: null,
    unreachableError: null,
  };
  // Written while its token is live: one revoked since the request's check leaves it stopped.
  const row = { id: newId("hst"), address: reg.address, ...fields };
  const [registered] = await insertIf(db, hosts, row, liveToken(tokenId))
    .onConflictDoUpdate({
      target: hosts.address,
      set: {
        ...fields,
        state: sql`CASE WHEN ${hosts.state} = 'drained' THEN 'drained' ELSE 'up' END`,
        busy: 0,
        queued: 0,
      },
    })
    .returning({ id: hosts.id });
  if (!registered) throw await revokedMeanwhile(db, tokenId);
  const { id } = registered;
  // A host registers at its start (or once forgotten): the sync calls it had are over.
  await db.batch([db.delete(hostApps).where(eq(hostApps.hostId, id)), hostRestarted(db, id, now)]);
  return id;
}

/** The host `id`, if `tokenId` (the token it presented) is the one it registered with. */
export async function hostOf(db: Database, id: string, tokenId: string) {
  const [row] = await db
    .select({ id: hosts.id, state: hosts.state })
    .from(hosts)
    .where(and(eq(hosts.id, id), eq(hosts.tokenId, tokenId)));
  return row;
}

/** The app's current version and its digest; undefined if there is no such app. */
export async function currentVersion(
  db: Database,
  project: string,
  app: string,
): Promise<CurrentVersion | undefined> {
  const [row] = await liveVersions(db, and(eq(apps.projectId, project), eq(apps.name, app)));
  return row && { version: row.version, digest: row.digest, appId: row.appId };
}

/**
 * The digest recorded for version `version` of the app: null for a version deployed before
 * digests were kept, undefined if no such version is recorded.
 */
export async function recordedDigest(
  db: Database,
  project: string,
  app: string,
  version: number,
): Promise<string | null | undefined> {
  const [row] = await db
    .select({ digest: deployments.digest })
    .from(deployments)
    .innerJoin(apps, eq(apps.id, deployments.appId))
    .where(and(eq(apps.projectId, project), eq(apps.name, app), eq(deployments.version, version)));
  return row?.digest;
}

/** The live version of each app `where` selects, with its digest and its config. */
export function liveVersions(db: Database, where: SQL | undefined) {
  return db
    .select({
      project: apps.projectId,
      app: apps.name,
      version: apps.currentVersion,
      digest: deployments.digest,
      appId: apps.id,
      config: deployments.config,
    })
    .from(apps)
    .innerJoin(
      deployments,
      and(eq(deployments.appId, apps.id), eq(deployments.version, apps.currentVersion)),
    )
    .where(where);
}

/**
 * May host `id` start one more replica of the app? Yes while the app's replicas on every host
 * not down — this one's own included — are fewer than `maxReplicas`, unless an operator drained
 * it or it is stopped (its token revoked, or it left, since its request's check: a grant then
 * held a place of the app for 15 s on a host that ran nothing); the grant is counted at once (one statement: two hosts asking at the same moment cannot
 * both take the last one). On a full disk, or while heartbeats are held in memory, counted and
 * kept in memory (held-grants.ts).
 */
export async function grantReplica(
  db: Database,
  id: string,
  req: ReplicaRequest,
): Promise<ReplicaAnswer> {
  // Heartbeats held in memory (a full disk): the registry's truth is partly there.
  if (holdingBeats(db)) return grantHeld(db, id, req);
  try {
    return await grantWritten(db, id, req);
  } catch (err) {
    if (!isDiskFull(err)) throw err;
    return grantHeld(db, id, req, err);
  }
}

async function grantWritten(db: Database, id: string, req: ReplicaRequest) {
  const alive = Date.now() - DOWN_AFTER_MS;
  // The host knows its own replicas better than its last heartbeat did.
  if (req.have !== undefined)
    await db
      .update(hostApps)
      .set({ replicas: req.have })
      .where(
        and(
          eq(hostApps.hostId, id),
          eq(hostApps.projectId, req.project),
          eq(hostApps.app, req.app),
        ),
      );
  const replicasNow = sql`(SELECT coalesce(sum(ha.replicas), 0) FROM host_apps ha
    JOIN hosts h ON h.id = ha.host_id
    WHERE ha.project_id = ${req.project} AND ha.app = ${req.app} AND h.seen_at > ${alive})`;
  const granted = await db.all<{ replicas: number }>(sql`
    INSERT INTO host_apps (host_id, project_id, app, version, replicas, ready, busy)
    SELECT ${id}, ${req.project}, ${req.app}, ${req.version}, 1, 0, 0
    WHERE ${replicasNow} < ${req.maxReplicas}
      AND NOT EXISTS (SELECT 1 FROM hosts WHERE id = ${id} AND state IN ('drained', 'stopped'))
    ON CONFLICT (host_id, project_id, app)
      DO UPDATE SET replicas = replicas + 1, version = excluded.version
    RETURNING replicas`);
  const [now] = await db.all<{ replicas: number }>(sql`SELECT ${replicasNow} AS replicas`);
  return { granted: granted.length > 0, replicas: Number(now?.replicas ?? 0) };
}

/**
 * Every host with its state now (`down`: silent for `DOWN_AFTER_MS`; `stopped`: it said it left,
 * and stays so however long it is silent) and what it runs.
 */
export async function listHosts(db: Database): Promise<RegisteredHost[]> {
  const now = Date.now();
  const [rows, running] = await Promise.all([
    db.select().from(hosts).orderBy(hosts.registeredAt),
    db.select().from(hostApps),
  ]);
  const held = heldBeats(db); // a full disk: a host's last heartbeat, not written
  return rows.map((row) => {
    const beat = held.get(row.id);
    const h = beat ? { ...row, ...beat } : row;
    const state = (
      h.state !== "stopped" && now - h.seenAt > DOWN_AFTER_MS ? "down" : h.state
    ) as HostState;
    return {
      id: h.id,
      name: h.name,
      address: h.address,
      tokenId: h.tokenId,
      state,
      ...unreachableNow(h, state, now),
      slots: h.slots,
      memoryMb: h.memoryMb,
      busy: h.busy,
      queued: h.queued,
      registeredAt: h.registeredAt,
      seenAt: h.seenAt,
      apps: (beat?.apps ?? running.filter((a) => a.hostId === h.id)).map((a) => ({
        project: a.projectId,
        app: a.app,
        replicas: a.replicas,
        ready: a.ready,
        busy: a.busy,
      })),
    };
  });
}

/** A host as the registry lists it to an operator (the Worker's view: `PlacementHost`). */
export type RegisteredHost = Omit<PlacementHost, "state"> & { state: HostState } & HostFacts;

interface HostFacts {
  name: string;
  /** The join token it registered with (`GET /v2/hosts/tokens`). */
  tokenId: string;
  memoryMb: number;
  registeredAt: number;
  seenAt: number;
}

/** A host that is not down: where the control plane asks. */
export interface LiveHost {
  id: string;
  address: string;
  /** Draining: it finishes its work and takes none. */
  state: "up" | "draining";
}

/** The hosts that are neither down nor stopped (one an operator drained is draining). */
export async function liveHosts(db: Database): Promise<LiveHost[]> {
  return (await listHosts(db)).flatMap(({ id, address, state }) => {
    const placed = placementState(state);
    return placed === "down" ? [] : [{ id, address, state: placed }];
  });
}

export const FORGET_DOWN_MS = 10 * 60_000; // then a silent host is forgotten (docs/hosts.md)

/** Forgets hosts down for longer than `ms` (they register again if they come back). */
export async function forgetHosts(db: Database, ms: number): Promise<void> {
  const before = Date.now() - ms;
  const old = db.select({ id: hosts.id }).from(hosts).where(lte(hosts.seenAt, before));
  await db.batch([
    db.delete(hostApps).where(inArray(hostApps.hostId, old)),
    db.delete(hosts).where(lte(hosts.seenAt, before)),
  ]);
}
