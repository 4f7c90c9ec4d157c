/**
 * A host's heartbeat (docs/hosts.md): its state, its load and what it runs of each app replace
 * what it said before. The answer names the apps it runs that no longer exist, the current
 * version of the others, how many replicas of each it may keep, and the secrets revision of
 * their projects.
 *
 * Grants hold an app's `max_replicas` over the hosts that are not down, but a down host's
 * replicas stop counting: the other hosts are granted its share, and when it comes back (a
 * frozen process thawed, a partition healed) with its replicas, the app runs more than its
 * maximum. Then the host up since later gives way: each host may keep the app's maximum less the
 * replicas on the hosts up since before it (a host back from down is up since its return). While
 * the app runs no more than its maximum over all hosts, that is never fewer than a host has.
 * A host an operator drained keeps none: it retires its replicas as their calls end.
 */
import { and, eq, inArray, sql } from "drizzle-orm";
import type { AppConfig } from "../../common/app-config.ts";
import {
  DOWN_AFTER_MS,
  type Heartbeat,
  type HeartbeatAnswer,
} from "../../common/protocol/hosts.ts";
import { inParts } from "../db/in-parts.ts";
import type { Database } from "../db/index.ts";
import { insertIf } from "../db/insert-if.ts";
import { apps, hostApps, hosts, projects as projectsTable } from "../db/schema.ts";
import { ApiError, isDiskFull } from "../errors.ts";
import { beatWritten, DEGRADED, heldBeats, holdBeat } from "./held-beats.ts";
import { liveVersions } from "./registry.ts";
import { liveToken, revokedMeanwhile } from "./tokens.ts";

/**
 * Records host `id`'s heartbeat, replacing what it said before; answers the apps it runs that
 * no longer exist, and the current version of the others with the replicas it may keep.
 */
export async function recordHeartbeat(
  db: Database,
  id: string,
  beat: Heartbeat,
): Promise<HeartbeatAnswer> {
  const now = Date.now();
  const rows = beat.apps.map((a) => ({
    hostId: id,
    projectId: a.project,
    app: a.app,
    version: a.version,
    replicas: a.replicas,
    ready: a.ready,
    busy: a.busy,
  }));
  const liveHost = sql`exists (select 1 from ${hosts} where ${hosts.id} = ${id} and ${liveToken(hosts.tokenId)})`;
  let mine: Array<Array<{ state: string }>>;
  try {
    mine = (await db.batch([
      db
        .update(hosts)
        .set({
          // An operator's drain stands while the host says `up`; once it says it is stopping
          // (`draining`), that is what it is: a resume then would list it `up` to the Worker
          // until its next heartbeat. Stopped, it registers `up` anyway.
          state:
            beat.state === "draining"
              ? beat.state
              : sql`CASE WHEN ${hosts.state} = 'drained' THEN 'drained' ELSE ${beat.state} END`,
          seenAt: now,
          busy: beat.busy,
          queued: beat.queued,
          // Back from down: up since now. (The right-hand sides read the row before the update.)
          upSince: sql`CASE WHEN ${hosts.seenAt} > ${now - DOWN_AFTER_MS} THEN ${hosts.upSince} ELSE ${now} END`,
        })
        // Its token revoked since the request's check: it stays stopped, holding nothing.
        .where(and(eq(hosts.id, id), liveToken(hosts.tokenId)))
        .returning({ state: hosts.state }),
      db.delete(hostApps).where(eq(hostApps.hostId, id)),
      ...rows.map((r) => insertIf(db, hostApps, r, liveHost)),
    ])) as Array<Array<{ state: string }>>;
  } catch (err) {
    if (!isDiskFull(err)) throw err;
    const [row] = await db
      .select({ seenAt: hosts.seenAt, upSince: hosts.upSince, state: hosts.state })
      .from(hosts)
      .where(eq(hosts.id, id));
    const last = heldBeats(db).get(id) ?? row ?? { seenAt: 0, upSince: now };
    const upSince = last.seenAt > now - DOWN_AFTER_MS ? last.upSince : now;
    // An operator's drain stands here too (the row keeps it: nothing could be written).
    const drained = row?.state === "drained" && beat.state !== "draining";
    const { busy, queued } = beat;
    const state = drained ? "drained" : beat.state;
    holdBeat(db, id, { state, seenAt: now, upSince, busy, queued, apps: rows }, err);
    return { ...(await answerTo(db, id, beat.apps, drained)), degraded: DEGRADED };
  }
  const written = mine?.[0]?.[0];
  if (!written) throw await unwritten(db, id);
  beatWritten(db, id);
  return answerTo(db, id, beat.apps, written.state === "drained");
}

/** Why host `id`'s heartbeat was not written: its token revoked meanwhile (401), or it is gone. */
async function unwritten(db: Database, id: string): Promise<ApiError> {
  const [row] = await db.select({ tokenId: hosts.tokenId }).from(hosts).where(eq(hosts.id, id));
  if (row) return revokedMeanwhile(db, row.tokenId);
  return new ApiError("not_found", `no host '${id}' is registered: register again`);
}

/** `drained`: an operator drained the host, which keeps no replica (it retires them all). */
async function answerTo(
  db: Database,
  id: string,
  running: Heartbeat["apps"],
  drained: boolean,
): Promise<HeartbeatAnswer> {
  if (running.length === 0) return { gone: [], current: [] };
  const projects = [...new Set(running.map((a) => a.project))];
  const [existing, ahead, revisions] = await Promise.all([
    inParts(projects, (part) => liveVersions(db, inArray(apps.projectId, part))),
    replicasAhead(db, id, projects),
    inParts(projects, (part) =>
      db
        .select({ project: projectsTable.id, revision: projectsTable.secretsRevision })
        .from(projectsTable)
        .where(inArray(projectsTable.id, part)),
    ),
  ]);
  const known = new Map(existing.map((a) => [`${a.project}/${a.app}`, a]));
  const answer: HeartbeatAnswer = { gone: [], current: [], secrets: revisions };
  for (const { project, app } of running) {
    const key = `${project}/${app}`;
    const found = known.get(key);
    if (!found) {
      answer.gone.push({ project, app });
      continue;
    }
    const { config, ...current } = found;
    const max = (config as Partial<AppConfig> | null)?.scaling?.max_replicas;
    answer.current.push(
      drained
        ? { ...current, keep: 0 }
        : typeof max === "number"
          ? { ...current, keep: Math.max(0, max - (ahead.get(key) ?? 0)) }
          : current,
    );
  }
  return answer;
}

/**
 * Per app of `projects` (`project/app`): its replicas on the hosts not down that rank before
 * host `id` — up since earlier, or since the same moment with a smaller id.
 */
async function replicasAhead(
  db: Database,
  id: string,
  projects: string[],
): Promise<Map<string, number>> {
  const alive = Date.now() - DOWN_AFTER_MS;
  const stored = await inParts(projects, (part) =>
    db
      .select({
        hostId: hostApps.hostId,
        project: hostApps.projectId,
        app: hostApps.app,
        replicas: hostApps.replicas,
        seenAt: hosts.seenAt,
        upSince: hosts.upSince,
      })
      .from(hostApps)
      .innerJoin(hosts, eq(hosts.id, hostApps.hostId))
      .where(inArray(hostApps.projectId, part)),
  );
  // A host's held heartbeat (a full disk) stands for its row and what it runs.
  const held = heldBeats(db);
  const wanted = new Set(projects);
  const rows = [
    ...stored.filter((r) => !held.has(r.hostId)),
    ...[...held.values()].flatMap((b) =>
      b.apps
        .filter((a) => wanted.has(a.projectId))
        .map((a) => ({ ...a, project: a.projectId, seenAt: b.seenAt, upSince: b.upSince })),
    ),
  ].filter((r) => r.seenAt > alive);
  const mine = rows.find((r) => r.hostId === id)?.upSince ?? Number.POSITIVE_INFINITY;
  const ahead = new Map<string, number>();
  for (const r of rows) {
    if (r.upSince > mine || (r.upSince === mine && r.hostId >= id)) continue;
    const key = `${r.project}/${r.app}`;
    ahead.set(key, (ahead.get(key) ?? 0) + r.replicas);
  }
  return ahead;
}
