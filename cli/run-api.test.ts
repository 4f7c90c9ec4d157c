// The commands on a run's URL (status, cancel, redeliver) with RUNLET_API_URL at the wrong place:
// they say so as `runlet run` does, naming the variable, rather than pass on a stranger's answer.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { ENV } from "../common/consts.ts";
import { newId } from "../common/ids.ts";
import { runlet } from "./commands/test-support.ts";

const runId = newId("run");
let servers: Server[] = [];
/** The control plane (its 404 for a path it has no route for), a web page, the run API. */
let controlPlane: string;
let page: string;
let runApi: string;
/** Where nothing listens. */
let nothing: string;

async function serve(answer: Parameters<typeof createServer>[1]): Promise<string> {
  const server = createServer(answer);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

beforeAll(async () => {
  controlPlane = await serve((req, res) => {
    // For `cancel --queued`: the app, and the runs index's list of one queued async run.
    const json = { "content-type": "application/json" };
    if (req.url === "/v2/projects/prj_1/apps/hello")
      return res.writeHead(200, json).end(JSON.stringify({ name: "hello" }));
    if (req.url?.startsWith("/v2/projects/prj_1/runs?"))
      return res
        .writeHead(200, json)
        .end(JSON.stringify({ runs: [{ id: runId, async: true }], hasMore: false }));
    res
      .writeHead(404, { "content-type": "application/json", "x-request-id": newId("req") })
      .end(JSON.stringify({ message: `no route for ${req.method} ${req.url}`, code: "not_found" }));
  });
  page = await serve((_req, res) => res.writeHead(200).end("<html>hi</html>"));
  // The run API, its run still running.
  runApi = await serve((_req, res) => {
    const view = { run_id: runId, app: "hello", function: "run", async: true, status: "running" };
    res.writeHead(200, { "content-type": "application/json", "x-request-id": runId });
    res.end(JSON.stringify(view));
  });
  // A port that was free a moment ago: one listened on, then closed.
  nothing = await serve(() => {});
  await new Promise((resolve) => servers.pop()?.close(resolve));
});
afterAll(async () => {
  await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  servers = [];
});

const env = (apiUrl: string) => ({
  [ENV.baseUrl]: controlPlane,
  [ENV.apiUrl]: apiUrl,
  [ENV.project]: "prj_1",
  [ENV.token]: "t",
  RUNLET_WEBHOOK_SECRET: "s",
});

const commands = [
  ["status", runId, "--app", "hello"],
  ["status", runId, "--app", "hello", "--wait"],
  ["cancel", runId, "--app", "hello"],
  ["cancel", "--app", "hello", "--queued"],
  ["redeliver", runId, "--app", "hello"],
];

it("says that the control plane at RUNLET_API_URL is not the run API", async () => {
  // It said "no route for GET /v4/prj_1/hello/runs/run_…", as if the run were not there.
  for (const args of commands) {
    const said = await runlet(args, env(controlPlane));
    expect(said.code, args.join(" ")).toBe(1);
    expect(said.stderr).toMatch(
      new RegExp(
        `^runlet ${args[0]}: ${controlPlane} \\(RUNLET_API_URL\\) is Runlet's control plane \\(the management API, RUNLET_BASE_URL's\\), not its run API: it answered 404 \\{"message":"no route for \\w+ /v4/prj_1/hello/runs/${runId}.*Set RUNLET_API_URL to the run API's address`,
      ),
    );
  }
});

it("says that another server at RUNLET_API_URL is not the run API, with --json too", async () => {
  // It said "the worker answered 200".
  for (const args of commands) {
    const said = await runlet([...args, "--json"], env(page));
    expect(said.code, args.join(" ")).toBe(1);
    expect(JSON.parse(said.stdout).message).toMatch(
      new RegExp(
        `^${page} \\(RUNLET_API_URL\\) is not Runlet's run API \\(its answer carries no run id\\): it answered 200 <html>hi</html>\\. Set RUNLET_API_URL`,
      ),
    );
  }
});

it("says at once that nothing answers at RUNLET_API_URL, --wait included", async () => {
  // `status --wait` read again for its whole --timeout (10 min), then said the run "goes on".
  for (const args of commands) {
    const said = await runlet(args, env(nothing));
    expect(said.code, args.join(" ")).toBe(1);
    expect(said.stderr).toMatch(
      new RegExp(
        `^runlet ${args[0]}: \\w+ failed: cannot reach ${nothing} — is Runlet running \\(\`npm start\`\\)\\?`,
      ),
    );
  }
});

it("says that a run has not ended once --wait's time is up, at the run API", async () => {
  // That error has no answer behind it (status 0): it read as "not Runlet's run API".
  const args = ["status", runId, "--app", "hello", "--wait", "--timeout", "1s"];
  const said = await runlet(args, env(runApi));
  expect(said.code).toBe(1);
  expect(said.stderr).toMatch(
    new RegExp(`^runlet status: run ${runId} has not ended after 1s \\(running\\): it goes on$`),
  );
  // --json: the run as it is now beside the message (it printed {message} alone), still exit 1.
  const json = await runlet([...args.slice(0, -1), "2s", "--json"], env(runApi));
  expect(json.code).toBe(1);
  const message = `run ${runId} has not ended after 2s (running): it goes on`;
  expect(JSON.parse(json.stdout)).toEqual({
    message,
    run: { run_id: runId, app: "hello", function: "run", async: true, status: "running" },
  });
  expect(json.stderr).toBe(`runlet status: ${message}`);
});
