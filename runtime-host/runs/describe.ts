/**
 * How the host describes a run to the runs index and to the Worker: a custom app's request by its
 * method and path, a run's time in milliseconds. Imports nothing of the host.
 */

/** A custom app's run as the runs index names it: method and path, never the query (secrets). */
export function requestName(method: string | undefined, target: string): string {
  return `${method} ${target.split("?")[0]}`;
}

/** Milliseconds since `started` (a `performance.now()`), to a hundredth: a run's time. */
export function msSince(started: number): number {
  return Math.round((performance.now() - started) * 100) / 100;
}
