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
