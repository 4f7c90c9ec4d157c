// `runlet logs <run_id> --follow` against a management API on loopback that plays a run's life:
// not yet in the runs index, queued, running with an unfinished line, lines dropped between two
// reads, ended. What a user sees: each line once, in order, and the notes on stderr.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, expect, it, vi } from "vitest";
import { newId } from "../../common/ids.ts";
import { followRunLogs } from "./logs-follow.ts";

const runId = newId("run");
const time = "2026-11-26T10:00:00.000Z";
const line = (text: string, seq?: number) => ({
  time,
  stream: "stdout",
  text,
  ...(seq ? { seq } : {}),
});

/** Each read of the run's state moves it one step; the logs answer for the step it is at. */
type Step = { status?: string; lines?: ReturnType<typeof line>[] };
const life: Step[] = [
  {}, // not in the runs index yet
  { status: "queued" },
  { status: "running", lines: [line("one", 1), line("tw")] },
  { status: "running", lines: [line("one", 1), line("two", 2), line("thr")] },
  // Lines 3 to 5 were dropped (the 64 KiB bound) before this read.
  { status: "running", lines: [line("six", 6)] },
  { status: "success", lines: [line("six", 6), line("seven", 7)] },
];
let steps = life;
let step = -1;
const afters: string[] = [];
let server: Server;
let baseUrl: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(body));
    };
    const now = steps[Math.max(0, step)] ?? {};
    if (url.pathname.endsWith("/logs")) {
      afters.push(url.searchParams.get("after") ?? "");
      if (!now.lines) return send(404, { message: "no logs yet" });
      const after = Number(url.searchParams.get("after"));
      return send(200, {
        runId,
        lines: now.lines.filter((l) => l.seq === undefined || l.seq > after),
        truncated: false,
      });
    }
    step++;
    const state = steps[step] ?? {};
    if (!state.status) return send(404, { message: `run '${runId}' not found` });
    if (state.status === "restarting") return send(503, { message: "restarting" });
    return send(200, { id: runId, app: "a", function: "run", status: state.status });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => new Promise((resolve) => server.close(resolve)));
afterEach(() => {
  vi.restoreAllMocks();
  step = -1;
  afters.length = 0;
});

it("waits for a run just accepted and queued, prints each whole line once, says what was dropped and how it ended", async () => {
  const out = vi.spyOn(console, "log").mockImplementation(() => {});
  const err = vi.spyOn(console, "error").mockImplementation(() => {});
  const config = { baseUrl, apiUrl: baseUrl, projectId: "prj_1", token: "t" };
  const code = await followRunLogs(config, runId, { json: false, color: false, pollMs: 1 });
  expect(code).toBe(0);
  expect(out.mock.calls.map((c) => String(c[0]).split("  ")[2])).toEqual([
    "one",
    "two",
    "six",
    "seven",
  ]);
  expect(err.mock.calls.map((c) => c[0])).toEqual([
    `(waiting for ${runId}: it was just accepted)`,
    `(waiting for ${runId}: it is queued)`,
    "(3 lines were dropped: a run keeps its newest 64 KiB)",
    `(${runId} ended: success)`,
  ]);
  // Each read asked for the lines past the last one printed.
  expect(afters).toEqual(["0", "0", "1", "2", "6"]);
});

it("says a run cancelled while queued wrote no lines, and how it ended, in its exit code too", async () => {
  steps = [{ status: "queued" }, { status: "cancelled" }];
  const err = vi.spyOn(console, "error").mockImplementation(() => {});
  const config = { baseUrl, apiUrl: baseUrl, projectId: "prj_1", token: "t" };
  // 1, as `status --wait` exits for a run that did not succeed (it was 0 whatever the end).
  expect(await followRunLogs(config, runId, { json: false, color: false, pollMs: 1 })).toBe(1);
  expect(err.mock.calls.map((c) => c[0])).toEqual([
    `(waiting for ${runId}: it is queued)`,
    "(no lines: no logs yet)",
    `(${runId} ended: cancelled)`,
  ]);
});

it("exits 1 once the run it followed failed, after printing what it wrote", async () => {
  steps = [
    { status: "running", lines: [line("one", 1)] },
    { status: "failure", lines: [line("one", 1), line("boom", 2)] },
  ];
  const out = vi.spyOn(console, "log").mockImplementation(() => {});
  vi.spyOn(console, "error").mockImplementation(() => {});
  const config = { baseUrl, apiUrl: baseUrl, projectId: "prj_1", token: "t" };
  expect(await followRunLogs(config, runId, { json: true, color: false, pollMs: 1 })).toBe(1);
  expect(out.mock.calls.map((c) => JSON.parse(String(c[0])).text)).toEqual(["one", "boom"]);
});

it("rides out a control plane that fails a moment (runlet start restarts it), and goes on", async () => {
  steps = [
    { status: "running", lines: [line("one", 1)] },
    { status: "restarting" },
    { status: "restarting" },
    { status: "success", lines: [line("one", 1), line("two", 2)] },
  ];
  const out = vi.spyOn(console, "log").mockImplementation(() => {});
  const err = vi.spyOn(console, "error").mockImplementation(() => {});
  const config = { baseUrl, apiUrl: baseUrl, projectId: "prj_1", token: "t" };
  // It gave up at the first failed read: exit 1, as if the run had failed.
  expect(await followRunLogs(config, runId, { json: true, color: false, pollMs: 1 })).toBe(0);
  expect(out.mock.calls.map((c) => JSON.parse(String(c[0])).text)).toEqual(["one", "two"]);
  expect(err.mock.calls.map((c) => c[0])).toEqual([
    expect.stringMatching(
      /^\(following the logs of run_\w+ failed.*restarting: reading again, for up to 60 s\)$/,
    ),
    "(Runlet answers again: following on)",
    `(${runId} ended: success)`,
  ]);
});

it("gives up once Runlet has not answered for its patience, with the last failure", async () => {
  vi.spyOn(console, "error").mockImplementation(() => {});
  const gone = "http://127.0.0.1:9";
  const config = { baseUrl: gone, apiUrl: gone, projectId: "prj_1", token: "t" };
  const options = { json: false, color: false, pollMs: 5, patienceMs: 50 };
  await expect(followRunLogs(config, runId, options)).rejects.toThrow(/cannot reach/);
});
