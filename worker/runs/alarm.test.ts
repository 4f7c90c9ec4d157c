/**
 * ShardAlarm alone, with a storage that records what it is asked and a clock the test moves:
 * when the one alarm of a shard moves, and when it stays.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { ShardAlarm } from "./alarm.ts";

const T0 = Date.parse("2026-11-26T12:00:00Z");

function recorded() {
  const calls: Array<number | "deleted"> = [];
  const storage = {
    setAlarm: async (at: number) => void calls.push(at),
    deleteAlarm: async () => void calls.push("deleted"),
  } as unknown as DurableObjectStorage;
  return { alarm: new ShardAlarm(storage), calls };
}
const at = (ms: number) => vi.spyOn(Date, "now").mockReturnValue(T0 + ms);

afterEach(() => {
  vi.restoreAllMocks();
});

describe("a shard's one alarm", () => {
  it("while runs are queued, is at most 30 s away, and one due but not yet fired is set for now, not pushed on", () => {
    const { alarm, calls } = recorded();
    const farOff = T0 + 600_000; // a queued run's expiry in 10 minutes
    at(0);
    alarm.set([farOff], true);
    expect(calls).toEqual([T0 + 30_000]);
    // Its time has come and workerd has not run it yet (late on a loaded machine); runs move.
    at(30_400);
    alarm.set([farOff], true);
    at(30_900);
    alarm.set([farOff], true);
    // Not pushed 30 s on by each move: written again for now (which brings back a lost one).
    expect(calls).toEqual([T0 + 30_000, T0 + 30_400, T0 + 30_900]);
    // It fires: the next is 30 s on again.
    alarm.fired();
    at(31_000);
    alarm.set([farOff], true);
    expect(calls).toEqual([T0 + 30_000, T0 + 30_400, T0 + 30_900, T0 + 61_000]);
  });

  it("without queued runs, an alarm past its time is written again for the soonest deadline", () => {
    const { alarm, calls } = recorded();
    at(0);
    alarm.set([T0 + 1_000], false);
    at(1_500); // the deadline it was for has moved (a delivery in flight moves its own)
    alarm.set([T0 + 60_000], false);
    expect(calls).toEqual([T0 + 1_000, T0 + 60_000]);
  });

  it("moves sooner for a sooner deadline, and stays for a later one or none", () => {
    const { alarm, calls } = recorded();
    at(0);
    alarm.set([T0 + 10_000, undefined], false);
    alarm.set([T0 + 20_000], false); // later: the earlier alarm stays, finds nothing, moves on
    alarm.set([T0 + 5_000], false);
    alarm.set([undefined], false);
    expect(calls).toEqual([T0 + 10_000, T0 + 5_000]);
    // Once it has fired with nothing left to do, no other is set.
    alarm.fired();
    at(5_000);
    alarm.set([undefined], false);
    expect(calls).toEqual([T0 + 10_000, T0 + 5_000]);
  });
});
