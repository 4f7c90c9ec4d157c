// The runs list of the dashboard (and of an app's page) says when a custom app answered outside
// 2xx: its run is a success (the app answered), and a 404 shown as a plain "success" read as if
// the call had worked, where `runlet runs` and the run's own page said "answered 404".
import { expect, it } from "vitest";
import { type RunItem, RunRows } from "./pages/runs.tsx";

const run = (over: Partial<RunItem>): RunItem => ({
  id: "run_x",
  app: "web",
  function: "GET /missing",
  async: false,
  status: "success",
  createdAt: "2026-11-28T00:00:00.000Z",
  finishedAt: "2026-11-28T00:00:00.010Z",
  runTimeMs: 10,
  host: null,
  webhook: null,
  ...over,
});

const statusCell = async (r: RunItem) => {
  const html = (await RunRows({ runs: [r], filtered: false, none: "" })).toString();
  const cells = [...html.matchAll(/<td[^>]*>(.*?)<\/td>/gs)].map((m) => m[1] ?? "");
  return (cells[4] ?? "").replace(/<[^>]+>/g, "");
};

it("shows a custom app's answer outside 2xx beside the run's success", async () => {
  expect(await statusCell(run({ statusCode: 404 }))).toBe("success (answered 404)");
  expect(await statusCell(run({ statusCode: 503 }))).toBe("success (answered 503)");
});

it("says nothing more of a 2xx answer or of a managed app's run", async () => {
  expect(await statusCell(run({ statusCode: 201 }))).toBe("success");
  expect(await statusCell(run({ function: "run" }))).toBe("success");
  expect(await statusCell(run({ status: "failure", function: "run" }))).toBe("failure");
});
