import { workerPath } from "../common/protocol/paths.ts";

/**
 * Wakes the run store once everything answers: queued runs are handed over and running ones
 * checked at once. The local runtime does not bring a Durable Object's alarm back after a
 * restart, so without this a run accepted before a crash would wait for the next request.
 * Says what it found, or why it could not (the start goes on: the next request wakes nothing).
 */
export async function wakeRuns(apiUrl: string, internalToken: string): Promise<string | undefined> {
  try {
    const res = await fetch(apiUrl + workerPath.wake, {
      method: "POST",
      headers: { authorization: `Bearer ${internalToken}` },
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
    return `could not be resumed: ${(err as Error).message}`;
  }
}
