/**
 * Heartbeats the database would not take (a full disk, docs/hosts.md): the last of each host is
 * kept in this process's memory, and the registry's reads (`listHosts`, the grants' count of
 * replicas ahead) take it over the host's row, so a host that still beats stays `up` for the
 * Worker's placement and in `runlet hosts`. Once a heartbeat is written again, its host's held
 * one is dropped. The log says when heartbeats begin to be held, and when they are written
 * again: once each, not per heartbeat. A control plane that restarts forgets what it held; the
 * hosts' next heartbeats (every 2 s) are held again.
 */
import { DOWN_AFTER_MS, type HostState } from "../../common/protocol/hosts.ts";
import type { Database } from "../db/index.ts";
import type { hostApps } from "../db/schema.ts";

export interface HeldBeat {
  state: HostState;
  seenAt: number;
  upSince: number;
  busy: number;
  queued: number;
  /** What the host runs, as the rows `host_apps` would hold. */
  apps: Array<typeof hostApps.$inferSelect>;
}

const held = new WeakMap<Database, Map<string, HeldBeat>>();
/** The databases whose heartbeats are being held now: the log has said so. */
const holding = new WeakSet<Database>();

/** What the host's answer says while its heartbeats are held. */
export const DEGRADED =
  "the control plane's disk is full: this heartbeat is kept in its memory, not written; the host stays up in the registry while it beats";

/** Keeps host `id`'s heartbeat in memory; the first one held says so in the log. */
export function holdBeat(db: Database, id: string, beat: HeldBeat, err: unknown): void {
  let beats = held.get(db);
  if (!beats) {
    beats = new Map();
    held.set(db, beats);
  }
  if (!holding.has(db)) {
    holding.add(db);
    let cause = err;
    while (cause instanceof Error && cause.cause instanceof Error) cause = cause.cause;
    console.error(
      `[control-plane] the disk is full (${cause instanceof Error ? cause.message : cause}): host heartbeats and replica grants are kept in memory until the database takes them again; free space where the control plane keeps its data (RUNLET_HOME locally)`,
    );
  }
  beats.set(id, beat);
}

/**
 * Host `id`'s heartbeat was written: its held one, if any, is dropped, and those of hosts down
 * since (they will not be written: a host that comes back registers or beats again).
 */
export function beatWritten(db: Database, id: string): void {
  const beats = held.get(db);
  beats?.delete(id);
  const down = Date.now() - DOWN_AFTER_MS;
  for (const [other, beat] of beats ?? []) if (beat.seenAt <= down) beats?.delete(other);
  if (!holding.delete(db)) return;
  console.error("[control-plane] host heartbeats are written to the database again");
}

/** Whether heartbeats are being held: from the first held until one is written again. */
export const holdingBeats = (db: Database): boolean => holding.has(db);

/** The held heartbeats, by host id. */
export function heldBeats(db: Database): ReadonlyMap<string, HeldBeat> {
  return held.get(db) ?? new Map();
}
