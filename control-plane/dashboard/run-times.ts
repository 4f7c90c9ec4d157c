/**
 * How long an app's ended runs took, as its page says it: the median and the 95th percentile
 * (nearest rank) of their run time on a replica, and of the whole time from acceptance to end
 * (for async runs, their wait in the queue too), with the longest. Runs without a run time
 * (a call that never reached a replica) count only in the second.
 */
import type { RunItem } from "./pages/runs.tsx";

/** The value at `p` (0–1) of `sorted` by nearest rank. */
function rank(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))] ?? 0;
}

/** 850 ms, 1.2 s, 3 min 5 s. */
export function durationText(ms: number): string {
  if (ms < 999.5) return `${Math.round(ms)} ms`;
  const tenths = Number((ms / 1_000).toFixed(1));
  if (tenths < 60) return `${tenths} s`;
  const s = Math.round(ms / 1_000);
  return `${Math.floor(s / 60)} min ${s % 60} s`;
}

function spread(values: number[]): string {
  if (values.length === 0) return "—";
  const sorted = [...values].sort((a, b) => a - b);
  const [p50, p95, most] = [rank(sorted, 0.5), rank(sorted, 0.95), sorted.at(-1) ?? 0];
  return `median ${durationText(p50)}, 95 % within ${durationText(p95)}, longest ${durationText(most)}`;
}

/** The "Run time" and "Accepted to ended" rows of an app's page, over its ended runs. */
export function runTimeRows(ended: RunItem[]): Array<[string, string]> {
  const of = ` (of the last ${ended.length} ended runs)`;
  const ran = ended.flatMap((r) => (r.runTimeMs === null ? [] : [r.runTimeMs]));
  const whole = ended.flatMap((r) =>
    r.finishedAt === null ? [] : [Date.parse(r.finishedAt) - Date.parse(r.createdAt)],
  );
  if (ended.length === 0) return [["Run time", "—"]];
  return [
    ["Run time", `${spread(ran)}${of}`],
    ["Accepted to ended", `${spread(whole)}${of}`],
  ];
}
