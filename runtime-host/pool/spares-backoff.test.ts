// A spare that cannot start, or dies as soon as it has, is started again after pauses that
// double (1 s up to a minute), each said once in the host's log: until 2026-11-27 one that died
// at once was started again every second for as long as the host ran, and one whose start
// failed was never tried again in the background. Counted on a fake clock.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it, vi } from "vitest";
import { type SpareReplica, Spares } from "./spares.ts";
import type { WorkloadSpec } from "./workload.ts";

type Fake = SpareReplica<WorkloadSpec>;

let root: string;
let logged: string[];

beforeEach(() => {
  vi.useFakeTimers();
  root = mkdtempSync(join(tmpdir(), "runlet-spares-"));
  logged = [];
  vi.spyOn(console, "error").mockImplementation((line: string) => {
    logged.push(line);
  });
});

afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
  rmSync(root, { recursive: true, force: true });
});

/** Spares whose every start goes as `start` says; `starts` counts them. */
function sparesOf(start: (exit: () => void) => Promise<void>) {
  const counted = { starts: 0 };
  const spares = new Spares<WorkloadSpec, Fake>(join(root, "slots"), 2, () => {
    let exited: () => void = () => {};
    const fake = {
      pid: undefined,
      startSpare: () => {
        counted.starts++;
        return start(() => exited());
      },
      onExit: (listener: () => void) => {
        exited = listener;
      },
      stop: async () => exited(),
      start: async () => {},
      assign: () => fake,
    };
    return fake as unknown as Fake;
  });
  return { spares, counted };
}

const FIVE_MINUTES = 5 * 60_000;

it("starts a spare that dies as soon as it is up again after growing pauses, not every second", async () => {
  const { spares, counted } = sparesOf(async (exit) => {
    setTimeout(exit, 0); // up, then gone at once (as a runtime that exits right after its start)
  });
  spares.fill();
  await vi.advanceTimersByTimeAsync(FIVE_MINUTES);
  // Pauses of 1, 2, 4, 8, 16, 32 s, then a minute: some 10 rounds of 2 spares; every second
  // would be some 300 rounds.
  expect(counted.starts).toBeGreaterThanOrEqual(8);
  expect(counted.starts).toBeLessThanOrEqual(30);
  // Once per step, not per second, and saying when the next is.
  expect(logged.length).toBeLessThanOrEqual(counted.starts / 2 + 1);
  expect(logged[0]).toMatch(/a spare replica exited while it waited; the next starts in 1 s/);
  expect(logged.at(-1)).toMatch(/failures in a row, the next starts in 60 s/);
  await spares.close();
});

it("tries again a spare whose start failed, after growing pauses", async () => {
  const { spares, counted } = sparesOf(async () => {
    throw new Error("bwrap: setting up uid map: Permission denied");
  });
  spares.fill();
  await vi.advanceTimersByTimeAsync(FIVE_MINUTES);
  expect(counted.starts).toBeGreaterThanOrEqual(8); // before: 2, never tried again
  expect(counted.starts).toBeLessThanOrEqual(30);
  expect(logged[0]).toMatch(/could not start: bwrap: setting up uid map: Permission denied/);
  await spares.close();
});

it("replaces a spare that waited long before it died after 1 s again", async () => {
  let dies = true;
  const exits: Array<() => void> = [];
  const { spares, counted } = sparesOf(async (exit) => {
    if (dies) setTimeout(exit, 0);
    else exits.push(exit);
  });
  spares.fill();
  await vi.advanceTimersByTimeAsync(20_000); // 1 + 2 + 4 + 8 s: the next pause is 16 s
  dies = false;
  await vi.advanceTimersByTimeAsync(20_000); // the next two start, and stay
  expect(exits).toHaveLength(2);
  await vi.advanceTimersByTimeAsync(60_000); // a good minute of waiting
  const before = counted.starts;
  exits[0]?.(); // killed (the OOM killer)
  await vi.advanceTimersByTimeAsync(1_000);
  expect(counted.starts).toBe(before + 1);
  expect(logged).toContain("runtime host: spare replicas start again");
  await spares.close();
});
