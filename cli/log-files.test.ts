/**
 * The logs of `runlet start` rotate by size (log-files.ts), with a limit of a few KiB here: no
 * line lost or cut, at most `keep` old files, a real child process writing as fast as it can.
 * Each line begins with when it came (ISO 8601, UTC), once however many pieces it came in.
 */
import { appendFileSync, readdirSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { LogFile, type LogLimits, logLimitsFrom, rotateIfOver } from "./log-files.ts";
import { startProcess, stopProcess } from "./processes.ts";

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "runlet-logs-"));
});
afterEach(() => rm(dir, { recursive: true, force: true }));

/** The files of `name`, oldest first: name.log.N … name.log.1, name.log. */
function filesOf(name: string): string[] {
  const rotated = readdirSync(dir)
    .filter((f) => f.startsWith(`${name}.log.`))
    .sort((a, b) => Number(b.split(".").pop()) - Number(a.split(".").pop()));
  return [...rotated, `${name}.log`];
}
/** A line's time stamp: `2026-11-26T21:04:05.123Z `. */
const STAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z /;
const STAMP_LENGTH = "2026-11-26T21:04:05.123Z ".length;
/** The lines of `name`'s files, oldest first, each checked for its stamp and shown without it. */
const linesOf = (name: string, stamped = true) =>
  filesOf(name).flatMap((f) =>
    readFileSync(join(dir, f), "utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => {
        if (!stamped) return l;
        expect(l).toMatch(STAMP);
        return l.slice(STAMP_LENGTH);
      }),
  );
const line = (i: number) => `line ${String(i).padStart(5, "0")} ${"x".repeat(40)}`;

it("rotates a log it writes once it would pass its size, keeping every line whole and in order", async () => {
  const limits: LogLimits = { maxBytes: 2048, keep: 50 };
  const log = new LogFile(join(dir, "control-plane.log"), limits);
  // Chunks as a pipe gives them: cut anywhere, a line across two of them.
  const text = Array.from({ length: 600 }, (_, i) => `${line(i)}\n`).join("");
  for (let at = 0; at < text.length; at += 777) log.write(text.slice(at, at + 777));
  await log.end();

  expect(linesOf("control-plane")).toEqual(Array.from({ length: 600 }, (_, i) => line(i)));
  const files = filesOf("control-plane");
  expect(files.length).toBeGreaterThan(10);
  for (const f of files) {
    const content = readFileSync(join(dir, f), "utf8");
    expect(content.endsWith("\n")).toBe(true); // no line cut in two
    // A file passes its size only by a line it had begun.
    expect(content.length).toBeLessThanOrEqual(limits.maxBytes + STAMP_LENGTH + line(0).length);
  }
});

it("begins each line with its time in UTC: once for a line that came in pieces, each of many in one chunk, never two streams on one line", async () => {
  const path = join(dir, "runtime-host.log");
  appendFileSync(path, "an earlier writer's last line, never ended");
  const log = new LogFile(path);
  const before = Date.now();
  log.write("listening on 127.0.0.1:8790\nready");
  log.write(" in 35 ms\n");
  log.write("a\n\nb\n");
  // A stream's line left unended is not continued by another's.
  log.write("progress: 10%", "stdout");
  log.write("warning: slow disk\n", "stderr");
  log.write(", 20%\n", "stdout");
  log.write("half of a line");
  log.writeLine("runlet: the runtime host is back (restart 1)");
  await log.end();
  const lines = readFileSync(path, "utf8").split("\n");
  expect(lines.shift()).toBe("an earlier writer's last line, never ended");
  expect(lines.pop()).toBe(""); // the file ends with a newline
  expect(lines.map((l) => l.slice(STAMP_LENGTH))).toEqual([
    "listening on 127.0.0.1:8790",
    "ready in 35 ms",
    "a",
    "",
    "b",
    "progress: 10%",
    "warning: slow disk",
    ", 20%",
    "half of a line",
    "runlet: the runtime host is back (restart 1)",
  ]);
  for (const l of lines) {
    expect(l).toMatch(STAMP);
    const time = Date.parse(l.slice(0, STAMP_LENGTH - 1));
    expect(time).toBeGreaterThanOrEqual(before);
    expect(time).toBeLessThanOrEqual(Date.now());
  }
});

it("keeps only `keep` older files, the newest lines, and appends to the log it finds", async () => {
  const limits: LogLimits = { maxBytes: 1024, keep: 2 };
  appendFileSync(join(dir, "supervisor.log"), `${line(0)}\n`);
  const log = new LogFile(join(dir, "supervisor.log"), limits);
  for (let i = 1; i < 200; i++) log.write(`${line(i)}\n`);
  await log.end();
  expect(filesOf("supervisor")).toEqual(["supervisor.log.2", "supervisor.log.1", "supervisor.log"]);
  const kept = linesOf("supervisor");
  expect(kept.at(-1)).toBe(line(199));
  const first = Number(kept[0]?.split(" ")[1]);
  expect(kept).toEqual(Array.from({ length: 200 - first }, (_, i) => line(first + i)));
});

it("rotates a component's log while it writes, losing none of its lines", async () => {
  // A child that writes 20,000 lines as fast as it can, then exits.
  const script = `for (let i = 0; i < 20000; i++)
    process.stdout.write("line " + String(i).padStart(5, "0") + " " + "x".repeat(40) + "\\n");`;
  const proc = startProcess("worker", process.execPath, ["-e", script], {
    cwd: dir,
    env: process.env,
    logFile: join(dir, "worker.log"),
    echo: false,
    logLimits: { maxBytes: 64 * 1024, keep: 100 },
  });
  expect(await proc.exited).toBe("code 0");
  await stopProcess(proc);
  expect(filesOf("worker").length).toBeGreaterThan(10);
  expect(linesOf("worker")).toEqual(Array.from({ length: 20000 }, (_, i) => line(i)));
});

it("rotates a log another program appends to by name (wrangler's), once over the limit", () => {
  const path = join(dir, "wrangler.log");
  const limits: LogLimits = { maxBytes: 1024, keep: 3 };
  expect(rotateIfOver(path, limits)).toBe(false); // none yet
  for (let i = 0; i < 10; i++) appendFileSync(path, `${line(i)}\n`);
  expect(rotateIfOver(path, limits)).toBe(false); // 480 bytes
  for (let i = 10; i < 30; i++) appendFileSync(path, `${line(i)}\n`);
  expect(rotateIfOver(path, limits)).toBe(true);
  appendFileSync(path, `${line(30)}\n`);
  expect(filesOf("wrangler")).toEqual(["wrangler.log.1", "wrangler.log"]);
  expect(linesOf("wrangler", false)).toEqual(Array.from({ length: 31 }, (_, i) => line(i)));
});

it("takes its limits from RUNLET_LOG_MAX_BYTES and RUNLET_LOG_KEEP, and says which is wrong", () => {
  expect(logLimitsFrom({})).toEqual({ maxBytes: 10 * 1024 * 1024, keep: 3 });
  expect(logLimitsFrom({ RUNLET_LOG_MAX_BYTES: "4096", RUNLET_LOG_KEEP: "1" })).toEqual({
    maxBytes: 4096,
    keep: 1,
  });
  expect(logLimitsFrom({ RUNLET_LOG_MAX_BYTES: "10M" })).toBe(
    "RUNLET_LOG_MAX_BYTES must be a whole number, at least 1024 (it is '10M')",
  );
  expect(logLimitsFrom({ RUNLET_LOG_KEEP: "0" })).toBe(
    "RUNLET_LOG_KEEP must be a whole number, at least 1 (it is '0')",
  );
});
