// The replicas of deploys' trials (trials.ts), over replicas without a process: one that started
// is handed to the pool once, for its own version and files only, and one never asked for stops
// after the app's cooldown (at least MIN_HOLD_MS), saying so (the host then drops its files).
import { afterEach, describe, expect, it, vi } from "vitest";
import { FakeReplica, fakeTarget } from "./test-support.ts";
import { MIN_HOLD_MS, Trials } from "./trials.ts";
import { hostFailure, WorkloadError, type WorkloadSpec } from "./workload.ts";

afterEach(() => {
  vi.useRealTimers();
});

/** `exports`: the functions each replica's module exports (`run` unless given). */
function trialsOf(starting?: () => Promise<void>, exports?: string[]) {
  const made: FakeReplica[] = [];
  const expired: string[] = [];
  const trials = new Trials(
    (target) => {
      const replica = new FakeReplica(target as WorkloadSpec, starting);
      if (exports) replica.exports = exports;
      made.push(replica);
      return replica;
    },
    (target) => expired.push(`${target.app} v${target.version}`),
  );
  return { trials, made, expired };
}

describe("trials", () => {
  it("hands a started replica to the pool once, for its own version and files only", async () => {
    const { trials, made } = trialsOf();
    const v2 = { ...fakeTarget(), version: 2, digest: "d2" };
    expect(await trials.start(v2)).toMatchObject({ started: true });
    expect(trials.claim({ ...v2, digest: "other files" })).toBeUndefined();
    expect(trials.claim({ ...v2, version: 3 })).toBeUndefined();
    expect(trials.claim(v2)).toBe(made[0]);
    expect(trials.claim(v2)).toBeUndefined();
    // Asked again (a retried deploy of the same files): a new one, then the one held.
    expect(await trials.start(v2)).toMatchObject({ started: true });
    expect(await trials.start(v2)).toMatchObject({ started: true });
    expect(made).toHaveLength(2);
  });

  it("stops a replica never asked for after the app's cooldown, and drops one that crashed at once", async () => {
    vi.useFakeTimers();
    const { trials, made, expired } = trialsOf();
    const long = { ...fakeTarget({ cooldown: 120 }), digest: "long" };
    const short = { ...fakeTarget({ cooldown: 0 }), app: "b", digest: "short" };
    await trials.start(long);
    await trials.start(short);
    vi.advanceTimersByTime(MIN_HOLD_MS);
    expect(expired).toEqual(["b v1"]); // a cooldown of 0 holds it MIN_HOLD_MS all the same
    expect(made.map((r) => r.exited)).toEqual([false, true]);
    await made[0]?.stop(); // it crashed while held: not handed out, its version dropped
    await vi.advanceTimersByTimeAsync(0);
    expect(trials.claim(long)).toBeUndefined();
    expect(expired).toEqual(["b v1", "a v1"]);
    vi.advanceTimersByTime(120_000);
    expect(expired).toEqual(["b v1", "a v1"]);
  });

  it("drops, at the end of the hold, the files of the last deploy that asked for the same version", async () => {
    vi.useFakeTimers();
    const dropped: unknown[] = [];
    const trials = new Trials(
      (target) => new FakeReplica(target as WorkloadSpec),
      (target) => dropped.push(target),
    );
    const first = fakeTarget({ cooldown: 0 });
    const again = { ...first }; // the same files staged again: another record of them
    await trials.start(first);
    await trials.start(again);
    vi.advanceTimersByTime(MIN_HOLD_MS);
    expect(dropped).toHaveLength(1);
    expect(dropped[0]).toBe(again);
  });

  it("answers a failed start with its message, and holds nothing", async () => {
    const { trials, made } = trialsOf(() =>
      Promise.reject(new WorkloadError({ kind: "load-failed", detail: "boom (./main.mjs:1)" })),
    );
    const answer = await trials.start(fakeTarget());
    expect(answer).toEqual({
      started: false,
      message: "the app failed to start: boom (./main.mjs:1)",
      output: [],
      fault: "app",
    });
    expect(made[0]?.exited).toBe(true);
    expect(trials.claim(fakeTarget())).toBeUndefined();
  });

  it("says a start that failed for a reason of the host's own is the host's fault, not the app's", async () => {
    const { trials } = trialsOf(() =>
      Promise.reject(
        hostFailure("cannot read the project's secrets: the control plane answered 500"),
      ),
    );
    expect(await trials.start(fakeTarget())).toEqual({
      started: false,
      message:
        "the runtime host could not start a replica of the app: cannot read the project's secrets: the control plane answered 500",
      output: [],
      fault: "host",
    });
  });

  it("refuses a module that loaded but exports no function, and holds nothing", async () => {
    const { trials, made } = trialsOf(undefined, []);
    const answer = await trials.start(fakeTarget());
    expect(answer).toMatchObject({
      started: false,
      message: expect.stringMatching(/^the app exports no function: its module loaded, but /),
    });
    expect(made[0]?.exited).toBe(true);
    expect(trials.claim(fakeTarget())).toBeUndefined();
  });

  it("says the functions a started module exports, also when the replica held answers again", async () => {
    // The deploy's hint named `run` for a module that exports only `handler`: a 404 twice.
    const { trials } = trialsOf(undefined, ["handler", "resize"]);
    const answer = { started: true, ms: expect.any(Number), exports: ["handler", "resize"] };
    expect(await trials.start(fakeTarget())).toEqual(answer);
    expect(await trials.start(fakeTarget())).toEqual(answer);
  });

  it("stops what it holds when closed, and gives no answer after (the host failed, not the app)", async () => {
    const { trials, made } = trialsOf();
    await trials.start(fakeTarget());
    await trials.close();
    expect(made[0]?.exited).toBe(true);
    await expect(trials.start({ ...fakeTarget(), version: 2 })).rejects.toMatchObject({
      failure: { kind: "closing" },
    });
  });
});
