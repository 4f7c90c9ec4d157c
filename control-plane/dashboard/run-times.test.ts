// An app's page says how long its runs take (round 13's platform team asked "is it slow or
// queued?" and the page had only the failure rate): run time on a replica, and acceptance to end.
import { expect, it } from "vitest";
import type { RunItem } from "./pages/runs.tsx";
import { durationText, runTimeRows } from "./run-times.ts";

const at = Date.parse("2026-11-26T12:00:00Z");
const run = (runTimeMs: number | null, waitedMs: number, over: Partial<RunItem> = {}): RunItem => ({
  id: "run_x",
  app: "svc",
  function: "run",
  async: true,
  status: "success",
  createdAt: new Date(at).toISOString(),
  finishedAt: new Date(at + waitedMs + (runTimeMs ?? 0)).toISOString(),
  runTimeMs,
  host: null,
  webhook: null,
  ...over,
});

it("gives the median, the 95th percentile and the longest of run time and of accepted-to-ended", () => {
  // 20 runs of 10, 20, … 200 ms, each after a wait in the queue of 1 s.
  const ended = [...Array(20)].map((_, i) => run((i + 1) * 10, 1_000));
  expect(runTimeRows(ended)).toEqual([
    ["Run time", "median 100 ms, 95 % within 190 ms, longest 200 ms (of the last 20 ended runs)"],
    [
      "Accepted to ended",
      "median 1.1 s, 95 % within 1.2 s, longest 1.2 s (of the last 20 ended runs)",
    ],
  ]);
});

it("counts a run that never reached a replica in the whole time only", () => {
  const ended = [run(50, 0), run(null, 30_000, { status: "failure" })];
  expect(runTimeRows(ended)).toEqual([
    ["Run time", "median 50 ms, 95 % within 50 ms, longest 50 ms (of the last 2 ended runs)"],
    [
      "Accepted to ended",
      "median 50 ms, 95 % within 30 s, longest 30 s (of the last 2 ended runs)",
    ],
  ]);
  expect(runTimeRows([])).toEqual([["Run time", "—"]]);
});

it("writes durations as a person reads them", () => {
  expect([0.4, 999, 999.7, 12_345, 59_999, 60_000, 185_000].map(durationText)).toEqual([
    "0 ms",
    "999 ms",
    "1 s",
    "12.3 s",
    "1 min 0 s",
    "1 min 0 s",
    "3 min 5 s",
  ]);
});
