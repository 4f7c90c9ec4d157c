/** The logs of runs, captured by the shim in a real replica process and kept by the host. */
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { newHome, removeHome, waitUntil } from "../test-support.ts";
import { ManagedReplica } from "./replica.ts";
import { linesOf } from "./replica-output.ts";
import { RunLogStore } from "./run-logs.ts";
import { WorkloadError } from "./workload.ts";

const OPTIONS = { startTimeoutMs: 10_000, stopGraceMs: 500 };

const APP = `
import { writeSync } from "node:fs";

console.log("module loaded");

const pause = (ms) => new Promise((r) => setTimeout(r, ms));

export async function chatty(n, ctx) {
  for (let i = 0; i < n; i++) {
    console.log(ctx.runId, "log", i);
    await pause(2);
    process.stdout.write(\`\${ctx.runId} write \${i}\\n\`);
    console.error(\`\${ctx.runId} error \${i}\`);
    await Promise.resolve();
    ctx.log("%s ctx %d", ctx.runId, i);
    // Awaited: on a loaded machine a 1 ms timer set after it can fire first (measured: 8 times
    // in 5,000), and a line written after the call returned is the replica's own, not the run's.
    await new Promise((done) => setImmediate(() => done(console.warn(\`\${ctx.runId} warn \${i}\`))));
    await pause(1);
  }
  setTimeout(() => console.log(\`\${ctx.runId} after return\`), 20);
  setTimeout(() => ctx.log(\`\${ctx.runId} ctx after return\`), 20);
  return n;
}

export function crash(_, ctx) {
  console.log("last words");
  ctx.log("from ctx");
  setTimeout(() => { throw new Error("boom in a timer"); }, 10);
  return new Promise(() => {});
}

export function exits() {
  console.error("bye");
  process.exit(3);
}

export function lots(n) {
  for (let i = 0; i < n; i++) console.log(\`line \${i} \${"x".repeat(40)}\`);
  return n;
}

// Characters of several bytes written in pieces, each piece on its own.
export function pieces() {
  for (const byte of Buffer.from("é✓😀\\n")) process.stdout.write(Buffer.from([byte]));
  // The streams' pieces interleaved (stdout's as hex strings): each stream's characters join.
  for (const byte of Buffer.from("ü€\\n")) {
    process.stderr.write(Buffer.from([byte]));
    process.stdout.write(Buffer.from([byte]).toString("hex"), "hex");
  }
  process.stdout.write(Buffer.from([0xf0, 0x9f])); // cut short by what follows
  console.log("after");
  process.stderr.write(Buffer.from([0xe2, 0x9c])); // cut short by the end of the call
  return "done";
}

// The process's own output (straight to its stdout), a byte at a time, then it exits.
export async function ownPieces() {
  for (const byte of Buffer.from("own é✓😀\\n")) {
    writeSync(1, Buffer.from([byte]));
    await pause(20);
  }
  process.exit(4);
}

// Lines as fast as the code can write them, to both streams; then returns, or exits.
export function flood({ n, exit }) {
  for (let i = 0; i < n; i++) {
    if (i % 3 === 0) console.error(\`e \${i}\`);
    else if (i % 3 === 1) console.log(\`o \${i}\`);
    else process.stdout.write(\`w \${i}\\n\`);
  }
  if (exit) process.exit(5);
  return n;
}

// Lines numbered from 1: a few, then many in ONE write (over the run's 64 KiB), then one more.
export function oneWrite(n) {
  console.log("line 1");
  console.log("line 2");
  let text = "";
  for (let i = 3; i < n + 3; i++) text += \`line \${i}\\n\`;
  process.stdout.write(text);
  console.log(\`line \${n + 3}\`);
  return Buffer.byteLength(text);
}

export function printsError() {
  console.error(new Error("logged, not thrown"));
  console.log(import.meta.url);
  return "ok";
}

export function forge() {
  const entry = { runId: "run_elsewhere", stream: "stdout", text: "forged\\n", at: 0 };
  process.send({ type: "log", entries: [entry] });
  return "sent";
}
`;

describe("ManagedReplica: the logs of runs", () => {
  let dir: string;
  const replicas: ManagedReplica[] = [];

  beforeEach(async () => {
    dir = await newHome();
  });

  afterEach(async () => {
    await Promise.all(replicas.splice(0).map((r) => r.stop()));
    await removeHome(dir);
  });

  async function started(store: RunLogStore) {
    const appDir = join(dir, `app-${replicas.length}`);
    await mkdir(appDir);
    await writeFile(join(appDir, "main.mjs"), APP);
    const replica = new ManagedReplica(
      { project: "prj_1", app: "chatty", version: 1, dir: appDir },
      { ...OPTIONS, runLogs: store },
    );
    replicas.push(replica);
    await replica.start();
    return replica;
  }

  const textsOf = (store: RunLogStore, runId: string) =>
    (store.get(runId)?.lines ?? []).map((l) => `${l.stream} ${l.text}`);

  it("keeps two concurrent runs apart, across awaits and every way of writing", async () => {
    const store = new RunLogStore({ bytesPerRun: 64 * 1024, runs: 10 });
    const replica = await started(store);
    const n = 15;
    const outcomes = await Promise.all(
      ["run_a", "run_b"].map((runId) =>
        replica.invoke({ fn: "chatty", payload: n, runId }, 10_000),
      ),
    );
    expect(outcomes).toEqual([
      { kind: "returned", value: n },
      { kind: "returned", value: n },
    ]);
    for (const [runId, other] of [
      ["run_a", "run_b"],
      ["run_b", "run_a"],
    ] as const) {
      const lines = textsOf(store, runId);
      const expected = [
        ["stdout", "log"],
        ["stdout", "write"],
        ["stderr", "error"],
        ["stdout", "ctx"],
        ["stderr", "warn"],
      ].flatMap(([stream, kind]) =>
        Array.from({ length: n }, (_, i) => `${stream} ${runId} ${kind} ${i}`),
      );
      // Named on failure: which lines went missing, and what came that was not expected.
      expect(expected.filter((line) => !lines.includes(line))).toEqual([]);
      expect(lines.filter((line) => !expected.includes(line))).toEqual([]);
      expect(lines).toHaveLength(5 * n);
      expect(lines.filter((l) => l.includes(other))).toEqual([]);
      expect(store.get(runId)?.truncated).toBe(false);
    }
    // The runs did overlap: each began before the other ended.
    const times = (runId: string) => store.get(runId)?.lines.map((l) => Date.parse(l.time)) ?? [];
    expect(times("run_a")[0]).toBeLessThan(times("run_b").at(-1) ?? 0);
    expect(times("run_b")[0]).toBeLessThan(times("run_a").at(-1) ?? 0);

    // Output outside any call is the replica's own, in no run.
    await waitUntil(() => replica.logs.text().includes("run_b ctx after return"));
    const own = replica.logs.text();
    expect(own).toContain("module loaded\n");
    expect(own).toContain("run_a after return\n");
    expect(own).toContain("run_a write 3\n");
    for (const runId of ["run_a", "run_b"]) {
      expect(textsOf(store, runId).join("\n")).not.toMatch(/after return|module loaded/);
    }
  });

  it("keeps a crashed run's output, the crash report and how the process ended", async () => {
    const store = new RunLogStore({ bytesPerRun: 64 * 1024, runs: 10 });
    const replica = await started(store);
    await waitUntil(() => replica.logs.text().includes("module loaded"));
    const failure = await replica
      .invoke({ fn: "crash", payload: null, runId: "run_crash" }, 10_000)
      .catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(WorkloadError);
    await waitUntil(() => textsOf(store, "run_crash").some((l) => l.includes("runlet: ")));
    expect(replica.exited).toBe(true);
    const lines = textsOf(store, "run_crash");
    expect(lines.slice(0, 2)).toEqual(["stdout last words", "stdout from ctx"]);
    expect(lines).toContain("stderr Error: boom in a timer");
    expect(lines.at(-1)).toBe(
      "stderr runlet: the function's process exited (code 1) before this run finished",
    );

    const other = await started(store);
    // The crash report takes the replica's own output that reaches the host during the run:
    // what the module printed must be in before.
    await waitUntil(() => other.logs.text().includes("module loaded"));
    await other.invoke({ fn: "exits", payload: null, runId: "run_exit" }, 10_000).catch(() => {});
    await waitUntil(() => textsOf(store, "run_exit").some((l) => l.includes("runlet: ")));
    expect(textsOf(store, "run_exit")).toEqual([
      "stderr bye",
      "stderr runlet: the function's process exited (code 3) before this run finished",
    ]);
  });

  it("shows no path of the host in what a run wrote: the app's folder as ., the runtime as runlet:", async () => {
    const store = new RunLogStore({ bytesPerRun: 64 * 1024, runs: 10 });
    const replica = await started(store);
    await replica.invoke({ fn: "printsError", payload: null, runId: "run_paths" }, 10_000);
    await waitUntil(() => textsOf(store, "run_paths").some((l) => l.includes("main.mjs")));
    const text = textsOf(store, "run_paths").join("\n");
    expect(text).toContain("stderr Error: logged, not thrown");
    expect(text).toMatch(/at printsError \(\.\/main\.mjs:\d+:\d+\)/);
    expect(text).toContain("runlet:shim.mjs");
    expect(text).toContain("stdout ./main.mjs");
    expect(text).not.toContain(dir);
    expect(text).not.toContain("runtime-host/");
  });

  it("keeps the newest lines of a run within the limit, marked truncated", async () => {
    const store = new RunLogStore({ bytesPerRun: 1024, runs: 10 });
    const replica = await started(store);
    await replica.invoke({ fn: "lots", payload: 200, runId: "run_big" }, 10_000);
    const log = store.get("run_big");
    expect(log?.truncated).toBe(true);
    expect(log?.lines.at(-1)?.text).toBe(`line 199 ${"x".repeat(40)}`);
    const bytes = (log?.lines ?? []).reduce((sum, l) => sum + Buffer.byteLength(l.text) + 1, 0);
    expect(bytes).toBeLessThanOrEqual(1024);
    expect(bytes).toBeGreaterThan(900);
  });

  it("numbers the lines a single write over the run's bound drops, so a follower sees the gap", async () => {
    const store = new RunLogStore({ bytesPerRun: 64 * 1024, runs: 10 }); // the host's bounds
    const replica = await started(store);
    const n = 20_000; // some 220 KiB in one process.stdout.write
    const outcome = await replica.invoke({ fn: "oneWrite", payload: n, runId: "run_one" }, 10_000);
    expect(outcome).toMatchObject({ kind: "returned" });
    const log = store.get("run_one");
    expect(log?.truncated).toBe(true);
    // Every kept line has the number it has in all the run wrote: "line N" is line N.
    const wrong = (log?.lines ?? []).filter((l) => l.text !== `line ${l.seq}`);
    expect(wrong.slice(0, 3)).toEqual([]);
    expect(log?.lines.at(-1)).toMatchObject({ text: `line ${n + 3}`, seq: n + 3 });
    // A follower that had lines 1 and 2 reads a gap: what it gets next starts past line 3.
    const next = store.get("run_one", 2)?.lines[0]?.seq ?? 0;
    expect(next).toBeGreaterThan(3);
  });

  it("joins the pieces of characters written a byte at a time, per stream", async () => {
    const store = new RunLogStore({ bytesPerRun: 64 * 1024, runs: 10 });
    const replica = await started(store);
    expect(await replica.invoke({ fn: "pieces", payload: null, runId: "run_u" }, 10_000)).toEqual({
      kind: "returned",
      value: "done",
    });
    const expected = [
      "stdout é✓😀",
      "stderr ü€",
      "stdout ü€",
      "stdout \uFFFDafter",
      "stderr \uFFFD",
    ];
    expect(textsOf(store, "run_u")).toEqual(expected);
    const own = linesOf(replica.logs.chunks()).map((l) => `${l.stream} ${l.text}`);
    expect(own.filter((line) => line !== "stdout module loaded")).toEqual(expected);
  });

  it("joins the pieces of characters in the process's own output, and a crashed run's", async () => {
    const store = new RunLogStore({ bytesPerRun: 64 * 1024, runs: 10 });
    const replica = await started(store);
    await waitUntil(() => replica.logs.text().includes("module loaded"));
    await replica
      .invoke({ fn: "ownPieces", payload: null, runId: "run_o" }, 10_000)
      .catch(() => {});
    await waitUntil(() => textsOf(store, "run_o").some((l) => l.includes("runlet: ")));
    expect(textsOf(store, "run_o")).toEqual([
      "stdout own é✓😀",
      "stderr runlet: the function's process exited (code 4) before this run finished",
    ]);
    // Read as it came, a byte at a time at best (a chunk of its own each, most likely).
    expect(replica.logs.chunks().length).toBeGreaterThan(2);
    expect(linesOf(replica.logs.chunks()).map((l) => l.text)).toEqual([
      "module loaded",
      "own é✓😀",
    ]);
  });

  it("keeps a flood of lines complete and in order, every one in before the call's result", async () => {
    const store = new RunLogStore({ bytesPerRun: 16 * 1024 * 1024, linesPerRun: 30_000, runs: 10 });
    const replica = await started(store);
    const n = 30_000;
    const expected = Array.from({ length: n }, (_, i) =>
      i % 3 === 0 ? `stderr e ${i}` : i % 3 === 1 ? `stdout o ${i}` : `stdout w ${i}`,
    );
    const before = Date.now();
    const flood = { fn: "flood", payload: { n }, runId: "run_flood" };
    expect(await replica.invoke(flood, 30_000)).toEqual({ kind: "returned", value: n });
    const after = Date.now();
    // Read as the result came: nothing may still be on its way.
    const lines = store.get("run_flood")?.lines ?? [];
    const texts = lines.map((l) => `${l.stream} ${l.text}`);
    expect(texts.length).toBe(n);
    expect(texts.filter((line, i) => line !== expected[i]).slice(0, 5)).toEqual([]);
    // Each line has its own time, in order, within the call.
    const times = lines.map((l) => Date.parse(l.time));
    expect(times.filter((t, i) => t < (times[i - 1] ?? before) || t > after)).toEqual([]);
    // The replica's own log has the same lines, in the same order.
    const own = linesOf(replica.logs.chunks()).map((l) => `${l.stream} ${l.text}`);
    expect(own.slice(-1000)).toEqual(expected.slice(-1000));
  });

  it("keeps the lines a run wrote just before its process exited", async () => {
    const store = new RunLogStore({ bytesPerRun: 1024 * 1024, runs: 10 });
    const replica = await started(store);
    await waitUntil(() => replica.logs.text().includes("module loaded"));
    // Fewer than the IPC socket holds: what is still queued in the process as it exits is lost.
    const flood = { fn: "flood", payload: { n: 1_000, exit: true }, runId: "run_exits" };
    await replica.invoke(flood, 30_000).catch(() => {});
    await waitUntil(() => textsOf(store, "run_exits").some((l) => l.includes("runlet: ")));
    const lines = textsOf(store, "run_exits");
    expect(lines).toHaveLength(1_001);
    expect(lines.slice(-3)).toEqual([
      "stdout w 998",
      "stderr e 999",
      "stderr runlet: the function's process exited (code 5) before this run finished",
    ]);
  });

  it("keeps no log a run's code sends for a run it is not running", async () => {
    const store = new RunLogStore({ bytesPerRun: 1024, runs: 10 });
    const replica = await started(store);
    expect(await replica.invoke({ fn: "forge", payload: null, runId: "run_f" }, 10_000)).toEqual({
      kind: "returned",
      value: "sent",
    });
    expect(store.has("run_elsewhere")).toBe(false);
    expect(textsOf(store, "run_f")).toEqual([]);
  });
});
