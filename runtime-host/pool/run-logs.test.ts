import { describe, expect, it } from "vitest";
import { RUN_LOG_LIMITS } from "../limits.ts";
import { RunLogStore } from "./run-logs.ts";

const OWNER = { project: "p", app: "a" };
const texts = (store: RunLogStore, runId: string) =>
  store.get(runId)?.lines.map((l) => `${l.stream}:${l.text}`);

describe("RunLogStore", () => {
  it("splits writes into lines per stream, joining pieces of a line", () => {
    const store = new RunLogStore({ bytesPerRun: 1024, runs: 10 });
    store.open("run_1", OWNER);
    store.write("run_1", "stdout", "hel", 1_000);
    store.write("run_1", "stderr", "oops\n", 1_001);
    store.write("run_1", "stdout", "lo\nsecond\r\nthird", 1_002);
    expect(texts(store, "run_1")).toEqual([
      "stderr:oops",
      "stdout:hello",
      "stdout:second",
      // An unfinished line is shown as it is so far.
      "stdout:third",
    ]);
    const log = store.get("run_1");
    expect(log?.lines[1]?.time).toBe(new Date(1_000).toISOString());
    expect(log).toMatchObject({ runId: "run_1", project: "p", app: "a", truncated: false });
    store.flush("run_1");
    store.write("run_1", "stdout", "fourth\n");
    expect(texts(store, "run_1")?.slice(-2)).toEqual(["stdout:third", "stdout:fourth"]);
  });

  it("numbers whole lines from 1, dropped ones counted, and gives those after a number (a follower's next poll)", () => {
    const store = new RunLogStore({ bytesPerRun: 12, runs: 10 });
    store.open("run_1", OWNER);
    for (const piece of ["one\n", "two\n", "three\n", "fou"]) store.write("run_1", "stdout", piece);
    const seqs = (after?: number) =>
      store.get("run_1", after)?.lines.map((l) => `${l.seq ?? "-"}:${l.text}`);
    // 12 bytes hold "two\nthree\n" (newlines count): "one" was dropped, still line 1.
    expect(seqs()).toEqual(["2:two", "3:three", "-:fou"]);
    expect(seqs(2)).toEqual(["3:three", "-:fou"]);
    expect(seqs(3)).toEqual(["-:fou"]);
    // Past what was dropped: from the oldest kept.
    expect(seqs(0)).toEqual(seqs());
    store.write("run_1", "stdout", "r\n");
    expect(seqs(3)).toEqual(["4:four"]);
  });

  it("counts the lines a single write over the limit drops, and drops the older ones with them", () => {
    const store = new RunLogStore({ bytesPerRun: 12, runs: 10 });
    store.open("run_1", OWNER);
    store.write("run_1", "stderr", "err\n");
    store.write("run_1", "stdout", "beg");
    // Lines 2 ("begin") to 7 are more than 12 bytes in one write: its newest 12 are kept.
    store.write("run_1", "stdout", "in\n3\n4\n5\n6\nseventh\neight\n");
    const seqs = (after?: number) =>
      store.get("run_1", after)?.lines.map((l) => `${l.seq ?? "-"}:${l.text}`);
    // "venth" is line 7, its start cut; "err" (line 1) is older than what was dropped: gone too.
    expect(seqs()).toEqual(["7:venth", "8:eight"]);
    expect(store.get("run_1")?.truncated).toBe(true);
    // A reader that had line 1 sees the gap.
    expect(seqs(1)).toEqual(["7:venth", "8:eight"]);
    store.write("run_1", "stdout", "nine\n");
    expect(seqs(8)).toEqual(["9:nine"]);
    // A write over the limit with no newline in what it drops counts no line: it is cut mid-line.
    store.write("run_1", "stdout", `${"x".repeat(20)}\n`);
    expect(seqs(9)).toEqual([`10:${"x".repeat(11)}`]);
  });

  it("keeps at most linesPerRun lines of a run, the newest: empty lines cost memory, not bytes", () => {
    const store = new RunLogStore({ bytesPerRun: 64 * 1024, runs: 10 }); // the host's lines bound
    store.open("run_1", OWNER);
    // 65,536 empty lines were "64 KiB" and held 4.9 MB of the host's memory per run.
    store.write("run_1", "stdout", "\n".repeat(70_000));
    store.write("run_1", "stdout", "last\n");
    const log = store.get("run_1");
    expect(log?.lines).toHaveLength(RUN_LOG_LIMITS.linesPerRun);
    expect(log?.lines.at(-1)?.text).toBe("last");
    expect(log?.truncated).toBe(true);
  });

  it("ignores writes to runs it was not told of", () => {
    const store = new RunLogStore({ bytesPerRun: 1024, runs: 10 });
    expect(store.write("run_x", "stdout", "lost\n")).toBe(false);
    expect(store.get("run_x")).toBeUndefined();
  });

  it("keeps the newest bytes of a run and says it dropped some", () => {
    const store = new RunLogStore({ bytesPerRun: 100, runs: 10 });
    store.open("run_1", OWNER);
    for (let i = 0; i < 50; i++) store.write("run_1", "stdout", `line ${i}\n`);
    const log = store.get("run_1");
    expect(log?.truncated).toBe(true);
    expect(log?.lines.at(-1)?.text).toBe("line 49");
    const bytes = (log?.lines ?? []).reduce((n, l) => n + Buffer.byteLength(l.text) + 1, 0);
    expect(bytes).toBeLessThanOrEqual(100);
    expect(bytes).toBeGreaterThan(90);
  });

  it("cuts a line longer than the limit to its end, in whole characters", () => {
    const store = new RunLogStore({ bytesPerRun: 10, runs: 10 });
    store.open("run_1", OWNER);
    store.write("run_1", "stdout", `${"é".repeat(20)}end\n`);
    const [line] = store.get("run_1")?.lines ?? [];
    expect(line?.text.endsWith("end")).toBe(true);
    expect(Buffer.byteLength(line?.text ?? "")).toBeLessThanOrEqual(9);
    expect(store.get("run_1")?.truncated).toBe(true);
    // A line that never ends is cut at the limit too, so memory stays bounded.
    store.open("run_2", OWNER);
    for (let i = 0; i < 100; i++) store.write("run_2", "stdout", "xxxx");
    expect(store.get("run_2")?.lines.every((l) => l.text.length <= 10)).toBe(true);
  });

  it("drops the oldest run's log past the number of runs; reopening keeps a log", () => {
    const store = new RunLogStore({ bytesPerRun: 100, runs: 2 });
    store.open("run_1", OWNER);
    store.write("run_1", "stdout", "one\n");
    store.open("run_2", OWNER);
    store.open("run_1", OWNER);
    store.open("run_3", OWNER);
    expect(store.has("run_2")).toBe(false);
    expect(texts(store, "run_1")).toEqual(["stdout:one"]);
    expect(store.has("run_3")).toBe(true);
  });
});
