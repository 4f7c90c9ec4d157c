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
