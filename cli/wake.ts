import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import type { WakeRequest } from "../common/protocol/apps.ts";
import { workerPath } from "../common/protocol/paths.ts";
import { USER_AGENT } from "./version.ts";

/**
 * The Durable Objects that have storage under wrangler's `--persist-to` folder: workerd keeps
 * each object of a class as `v3/do/{class's key}/{id}.sqlite` (and `-wal`, `-shm` beside it).
 * Undefined when that layout is not there (a wrangler that keeps its state otherwise): then the
 * Worker wakes every shard, as before. An empty list when the folder is there but holds none.
 */
export function storedObjects(persistDir: string): string[] | undefined {
  const root = join(persistDir, "v3");
  if (!existsSync(root)) return undefined;
  let classes: string[];
  try {
    classes = readdirSync(join(root, "do"));
  } catch {
    return []; // no object has been stored yet
  }
  const ids = new Set<string>();
  for (const key of classes) {
    let files: string[] = [];
    try {
      files = readdirSync(join(root, "do", key));
    } catch {
      continue; // not a folder
    }
    for (const file of files) {
      const id = /^([0-9a-f]{64})\.sqlite$/.exec(file)?.[1];
      if (id) ids.add(id);
    }
  }
  return [...ids];
}

/**
 * Wakes the run store once everything answers: queued runs are handed over and running ones
 * checked at once; only the shards that have storage (`persistDir`, wrangler's folder), so no
 * object is made for an app never run async. The local runtime does not bring a Durable Object's alarm back after a
 * restart, so without this a run accepted before a crash would wait for the next request.
 * Says what it found, or why it could not (the start goes on: the next request wakes nothing).
 */
export async function wakeRuns(
  apiUrl: string,
  internalToken: string,
  persistDir: string,
): Promise<string | undefined> {
  const asked: WakeRequest = { objects: storedObjects(persistDir) };
  try {
    const res = await fetch(apiUrl + workerPath.wake, {
      method: "POST",
      headers: {
        authorization: `Bearer ${internalToken}`,
        "content-type": "application/json",
        "user-agent": USER_AGENT,
      },
      body: JSON.stringify(asked),
      signal: AbortSignal.timeout(30_000),
    });
    const body = (await res.json().catch(() => ({}))) as {
      queued?: number;
      running?: number;
      failed?: number;
    };
    const { queued = 0, running = 0, failed = 0 } = body;
    if (!res.ok && !failed) return `could not be resumed: the worker answered ${res.status}`;
    // A running run is asked after, not resumed: its host may have lost it (then it fails).
    const resumed = `${queued} queued sent on to a host, ${running} running checked with theirs`;
    if (failed) return `${resumed}; ${failed} shard(s) could not be woken (see the worker's log)`;
    return queued + running > 0 ? resumed : undefined;
  } catch (err) {
    // The Worker not answering yet (restarting too, after the host): its own restart wakes the
    // shards once it answers. "could not be resumed: fetch failed" read as runs lost.
    const { message } = err as Error;
    if (err instanceof TypeError)
      return `wait for the Worker, which does not answer yet (${message}): they are resumed once it does`;
    return `could not be resumed: ${message}`;
  }
}
