/**
 * An app right now, in the words `runlet apps`, `runlet apps show` and the dashboard's app pages
 * share (docs/api.md, "Async runs: the queue"): its async runs as the run store counts them, and
 * its replicas as the hosts report them.
 */

/** An app's async runs now: queued in the run store, and running. */
export interface RunsNow {
  queued: number;
  running: number;
}

/**
 * "480 queued, 2 running": the run store's count, which the hosts' waiting calls are not (a host
 * holds only the few runs each shard hands over at a time).
 */
export const runsNowText = (runs: RunsNow): string =>
  `${runs.queued.toLocaleString("en")} queued, ${runs.running.toLocaleString("en")} running`;

/**
 * Why queued runs do not move, when no host takes work (`hostsTakingWork`, of the replicas
 * answer): "480 queued, 0 running" alone read as a queue on its way.
 */
export function stalledText(runs: RunsNow, hostsTakingWork: number | undefined): string {
  if (runs.queued === 0 || hostsTakingWork !== 0) return "";
  return " — no runtime host takes work now (each is down, stopping or drained): they wait for one";
}

/** What `GET …/apps/{name}/replicas` says of the app's replicas now. */
export interface ReplicasNow {
  host: string;
  replicas: { starting: number; idle: number; busy: number };
  queued: number;
}

/** "1 starting, 0 idle, 2 busy; 3 calls waiting at the hosts", or that no host answered. */
export function replicasNowText(now: ReplicasNow): string {
  if (now.host !== "reachable") return "the runtime host is not reachable";
  const { starting, idle, busy } = now.replicas;
  const calls = now.queued === 1 ? "call" : "calls";
  return `${starting} starting, ${idle} idle, ${busy} busy; ${now.queued} ${calls} waiting at the hosts`;
}
