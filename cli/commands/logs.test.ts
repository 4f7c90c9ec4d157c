// `runlet logs --app` as a script reads it: the replicas' lines alone on stdout, and the note
// that a replica's earlier bytes were dropped on stderr, naming the replica (it was on stdout,
// read as a line of output).
import { afterEach, expect, it, vi } from "vitest";
import { showAppOutput } from "./logs.ts";

afterEach(() => vi.restoreAllMocks());

it("prints the lines on stdout and the dropped bytes' note on stderr", () => {
  const out = vi.spyOn(console, "log").mockImplementation(() => {});
  const err = vi.spyOn(console, "error").mockImplementation(() => {});
  const time = "2026-11-26T10:00:00.000Z";
  showAppOutput(
    "web",
    {
      replicas: [
        {
          host: "local",
          pid: 42,
          version: 3,
          state: "running",
          startedAt: time,
          endedAt: null,
          exit: null,
          dropped: 1_000,
          lines: [{ time, stream: "stdout", text: "served GET /" }],
        },
      ],
      unreachable: 0,
    },
    false,
  );
  expect(out.mock.calls.map((c) => c.join(" "))).toEqual([
    `== replica 42 of v3 on local: running, since ${time}`,
    `${time}  stdout  served GET /`,
  ]);
  expect(err.mock.calls.map((c) => c.join(" "))).toEqual([
    "(replica 42 of v3 on local: 1000 earlier bytes were dropped: it keeps 256 KiB)",
  ]);
});

it("says how an ended replica's process ended in its header", () => {
  const out = vi.spyOn(console, "log").mockImplementation(() => {});
  vi.spyOn(console, "error").mockImplementation(() => {});
  const [start, end] = ["2026-11-26T10:00:00.000Z", "2026-11-26T10:05:00.000Z"];
  const replica = { host: "local", version: 3, startedAt: start, endedAt: end, dropped: 0 };
  showAppOutput(
    "web",
    {
      replicas: [
        { ...replica, pid: 43, state: "exited", exit: { code: 3, signal: null }, lines: [] },
        { ...replica, pid: 42, state: "exited", exit: { code: 137, signal: null }, lines: [] },
      ],
      unreachable: 0,
    },
    false,
  );
  expect(out.mock.calls.map((c) => c.join(" "))).toEqual([
    `== replica 43 of v3 on local: exited (code 3), ${start} to ${end}`,
    `== replica 42 of v3 on local: exited (code 137: 128 + SIGKILL), ${start} to ${end}`,
  ]);
});
