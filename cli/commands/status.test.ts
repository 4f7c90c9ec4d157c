import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { expect, it } from "vitest";
import { ENV } from "../../common/consts.ts";
import { newId } from "../../common/ids.ts";
import type { RunView } from "../../common/protocol/run-view.ts";
import { runLines } from "./status.ts";
import { runlet } from "./test-support.ts";

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

it("takes the run's app with --app, as redeliver does: the run API is asked, not the runs index", async () => {
  const runId = newId("run");
  const asked: string[] = [];
  const server = createServer((req, res) => {
    asked.push(`${req.method} ${req.url}`);
    const ours = req.url === `/v4/prj_1/hello/runs/${runId}`;
    res.writeHead(ours ? 200 : 404, { "content-type": "application/json" });
    res.end(JSON.stringify(ours ? { ...ended, run_id: runId } : { message: "not here" }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const env = {
    [ENV.baseUrl]: url,
    [ENV.apiUrl]: url,
    [ENV.project]: "prj_1",
    [ENV.token]: "t",
  };
  try {
    // It was "unknown option '--app'".
    const shown = await runlet(["status", runId, "--app", "hello", "--json"], env);
    expect(shown.code, shown.stderr).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({ run_id: runId, status: "failure" });
    // Waited on, it exits as without --app: 1 for a run that failed.
    const waited = await runlet(["status", runId, "--app", "hello", "--wait"], env);
    expect(waited.code).toBe(1);
    expect(waited.stdout).toMatch(/^status\s+failure: boom$/m);
    expect(asked).toEqual([
      `GET /v4/prj_1/hello/runs/${runId}`,
      `GET /v4/prj_1/hello/runs/${runId}`,
    ]);
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
});

it("cancels <run_id> --app A, the run of A, as status and redeliver take it", async () => {
  const runId = newId("run");
  const asked: string[] = [];
  const server = createServer((req, res) => {
    asked.push(`${req.method} ${req.url}`);
    const ours = req.method === "DELETE" && req.url === `/v4/prj_1/hello/runs/${runId}`;
    res.writeHead(ours ? 200 : 404, { "content-type": "application/json" });
    const view = { ...ended, run_id: runId, status: "cancelled", error: null };
    res.end(JSON.stringify(ours ? view : { message: "not here" }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const env = { [ENV.baseUrl]: url, [ENV.apiUrl]: url, [ENV.project]: "prj_1", [ENV.token]: "t" };
  try {
    // It was "give a run id, or --app NAME with --queued", a run id given.
    const cancelled = await runlet(["cancel", runId, "--app", "hello"], env);
    expect([cancelled.code, cancelled.stdout]).toEqual([0, `Cancelled ${runId}.`]);
    // It had started: what a cancel does to code that ignores ctx.signal is said.
    expect(cancelled.stderr).toBe(
      "It had started: its ctx.signal aborted, and its code that does not listen to it runs on to its end on its replica (no webhook is sent).",
    );
    expect(asked).toEqual([`DELETE /v4/prj_1/hello/runs/${runId}`]);
    // --queued is of an app's whole queue, not of one run; --app alone names no run.
    for (const args of [
      ["cancel", runId, "--app", "hello", "--queued"],
      ["cancel", "--app", "hello"],
      ["cancel", runId, "--queued"],
    ]) {
      const refused = await runlet(args, env);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/give a run id, or --app NAME with --queued/);
    }
    expect(asked).toHaveLength(1);
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
});

const ended = {
  project: "prj_1",
  app: "hello",
  function: "run",
  async: true,
  status: "failure",
  error: { message: "boom" },
  created_at: "2026-11-26T00:00:00.000Z",
  started_at: "2026-11-26T00:00:01.000Z",
  finished_at: "2026-11-26T00:00:02.000Z",
  run_time_ms: 1000,
  host: null,
};

it("says of each webhook delivery whether it was signed, and --json keeps the API's answer", async () => {
  const runId = newId("run");
  const attempt = { at: "2026-11-26T00:00:02.100Z", duration_ms: 12 };
  const view = {
    ...ended,
    run_id: runId,
    webhook: {
      delivery: 2,
      target: "https://hooks.example.com/b",
      signed: true,
      state: "delivered",
      attempts: [{ ...attempt, attempt: 1, status: 200, verdict: "delivered" }],
      earlier: [
        {
          delivery: 1,
          target: "https://hooks.example.com/a",
          signed: false,
          state: "failed",
          attempts: [{ ...attempt, attempt: 1, status: 401, verdict: "final" }],
        },
      ],
    },
  };
  const server = createServer((req, res) => {
    const ours = req.url === `/v4/prj_1/hello/runs/${runId}`;
    res.writeHead(ours ? 200 : 404, { "content-type": "application/json" });
    res.end(JSON.stringify(ours ? view : { message: "not here" }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const env = { [ENV.baseUrl]: url, [ENV.apiUrl]: url, [ENV.project]: "prj_1", [ENV.token]: "t" };
  try {
    const shown = await runlet(["status", runId, "--app", "hello"], env);
    expect(shown.code, shown.stderr).toBe(0);
    // Only --json said it: a receiver's 401 to an unsigned delivery read as the receiver's fault.
    expect(shown.stdout.split("\n").filter((l) => l.startsWith("webhook"))).toEqual([
      "webhook   delivery 1  failed  unsigned  https://hooks.example.com/a",
      "webhook   delivery 2  delivered  signed  https://hooks.example.com/b",
    ]);
    const json = await runlet(["status", runId, "--app", "hello", "--json"], env);
    expect(JSON.parse(json.stdout)).toEqual(view);
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
});
