import { expect, it } from "vitest";
import type { RunView } from "../../common/protocol/run-view.ts";
import { runLines } from "./status.ts";

it("shows how a custom app answered its run", () => {
  const view = {
    run_id: "run_01",
    app: "site",
    function: "PUT /jobs/9",
    async: true,
    status: "success",
    status_code: 418,
    created_at: "2026-11-26T00:00:00.000Z",
    started_at: "2026-11-26T00:00:00.100Z",
    finished_at: "2026-11-26T00:00:00.200Z",
    run_time_ms: 100,
  } as RunView;
  expect(runLines(view)).toContain("answered  418");
  expect(runLines({ ...view, status_code: undefined })).not.toContain("answered  418");
});

it("shows when a run started, after its time in the queue, and a dash until it has", () => {
  const view = {
    run_id: "run_01",
    app: "hello",
    function: "run",
    async: true,
    status: "success",
    created_at: "2026-11-26T00:00:00.000Z",
    started_at: "2026-11-26T00:00:07.500Z",
    finished_at: "2026-11-26T00:00:08.000Z",
    run_time_ms: 500,
  } as RunView;
  expect(runLines(view).slice(1)).toEqual([
    "status    success",
    "created   2026-11-26T00:00:00.000Z",
    "started   2026-11-26T00:00:07.500Z",
    "finished  2026-11-26T00:00:08.000Z  (500 ms)",
  ]);
  const queued = { ...view, status: "queued", started_at: null, finished_at: null };
  expect(runLines({ ...queued, run_time_ms: null } as RunView)).toContain("started   -");
});

it("names the runtime host a run went to, so a run its host lost can be looked into there", () => {
  const view = {
    run_id: "run_01",
    app: "hello",
    function: "run",
    async: true,
    status: "failure",
    error: { message: "the runtime host lost the run (it restarted or stopped)" },
    created_at: "2026-11-26T00:00:00.000Z",
    started_at: "2026-11-26T00:00:01.000Z",
    finished_at: "2026-11-26T00:01:00.000Z",
    run_time_ms: null,
    host: "hst_01m8cmeegm7cpesn1p7geebetb",
  } as RunView;
  expect(runLines(view)).toContain("host      hst_01m8cmeegm7cpesn1p7geebetb");
  expect(runLines({ ...view, host: null }).filter((l) => l.startsWith("host"))).toEqual([]);
});
