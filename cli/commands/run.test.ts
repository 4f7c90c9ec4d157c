// runlet run against a stand-in run API: what it says of an answer an Idempotency-Key replayed.

import { spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, beforeAll, beforeEach, expect, it, vi } from "vitest";
import { main } from "../main.ts";

const FIRST = "run_01m8cw5v4g64a9c9brt5eearq2";
const NEW = "run_01m8cw5v4g64a9c9brt5eearq3";
const REQ = "req_01m8cw5v4g64a9c9brt5eearq4";

/** Answers each key's first run again, as the run API does; a call without a key runs anew. */
let server: Server;
/** The paths the server has been asked that tests wait for. */
const asked: string[] = [];
beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.url?.endsWith("/slow")) asked.push("slow");
    const key = req.headers["idempotency-key"];
    const replayed = key === undefined ? {} : { "idempotent-replayed": "true" };
    const runId = key === undefined ? NEW : FIRST;
    const headers = { "content-type": "application/json", "x-request-id": runId, ...replayed };
    if (req.url?.includes("async=true"))
      return res.writeHead(202, headers).end(JSON.stringify({ run_id: runId }));
    // Another server at RUNLET_API_URL: the control plane's port (its 404 for a path it has no
    // route for, its own req_ id), or one that stamps no X-Request-Id at all.
    if (req.url?.includes("/cp/"))
      return res
        .writeHead(404, { "content-type": "application/json", "x-request-id": REQ })
        .end(JSON.stringify({ message: `no route for POST ${req.url}`, code: "not_found" }));
    if (req.url?.includes("/other/")) return res.writeHead(200).end("<html>hi</html>");
    // A function whose result chose status_code 204: no body, the run id in X-Request-Id alone.
    if (req.url?.endsWith("/nothing")) return res.writeHead(204, headers).end();
    // A custom app's server answers its own paths, without Runlet's run_id in the body.
    if (req.url?.endsWith("/web/page"))
      return res.writeHead(200, { "x-request-id": NEW }).end("<p>hi</p>\n");
    if (req.url?.includes("/web/"))
      return res
        .writeHead(req.url.includes("/echo") ? 200 : 404, { "x-request-id": NEW })
        .end(req.url.includes("/echo") ? '{"echo":{}}' : '{"message":"not found"}');
    // The key's refusals: nothing runs, and their run_id is the request's alone.
    if (key === "reused" || key === "running")
      return res
        .writeHead(key === "reused" ? 422 : 409, {
          "content-type": "application/json",
          "x-request-id": NEW,
        })
        .end(JSON.stringify({ message: `key ${key}`, code: "x", run_id: NEW }));
    if (req.url?.endsWith("/hello/slow")) return; // answers never: the caller gives up
    // The Worker's 502s where nothing ran: its control plane, or every runtime host, not reached.
    const notReached: Record<string, string> = {
      "/hello/cp-down": "cannot verify tokens: the control plane is not reachable",
      "/hello/cp-app": "the control plane is not reachable",
      "/hello/no-host":
        "no runtime host is up to take the call (each is down, stopping or drained by an operator); try again shortly",
    };
    const said = Object.entries(notReached).find(([path]) => req.url?.endsWith(path))?.[1];
    if (said)
      return res
        .writeHead(502, headers)
        .end(JSON.stringify({ message: said, code: "bad_gateway", run_id: runId }));
    // A function that returned normally with a status_code of its own: its run is a success.
    if (req.url?.endsWith("/hello/teapot"))
      return res
        .writeHead(418, headers)
        .end(JSON.stringify({ run_id: runId, result: { status_code: 418 }, run_time_ms: 2 }));
    if (key === "threw" || req.url?.endsWith("/hello/boom"))
      return res
        .writeHead(500, headers)
        .end(JSON.stringify({ run_id: runId, error: { message: "CUDA OOM" }, run_time_ms: 3 }));
    res.writeHead(200, headers).end(JSON.stringify({ run_id: runId, result: 42, run_time_ms: 1 }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
});
afterAll(() => server.close());

let out: ReturnType<typeof vi.spyOn>;
let err: ReturnType<typeof vi.spyOn>;
beforeEach(() => {
  out = vi.spyOn(console, "log").mockImplementation(() => {});
  err = vi.spyOn(console, "error").mockImplementation(() => {});
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  vi.stubEnv("RUNLET_BASE_URL", url);
  vi.stubEnv("RUNLET_API_URL", url);
  vi.stubEnv("RUNLET_PROJECT", "prj_1");
  vi.stubEnv("RUNLET_TOKEN", "t");
});
afterEach(() => {
  vi.restoreAllMocks();
  vi.unstubAllEnvs();
});

const printed = (spy: ReturnType<typeof vi.spyOn>) => spy.mock.calls.map((c) => String(c[0]));

it("says that a sync answer was replayed for its Idempotency-Key, not run again", async () => {
  expect(await main(["run", "hello", "--idempotency-key", "ok"])).toBe(0);
  expect(printed(out)).toEqual(["42"]);
  expect(printed(err)).toEqual([
    `Replayed: the answer of ${FIRST}, from the first call with this Idempotency-Key; nothing ran again (a new key runs it again).`,
  ]);
  // --json keeps the run API's answer on stdout; the note is on stderr all the same.
  out.mockClear();
  err.mockClear();
  expect(await main(["run", "hello", "--idempotency-key", "ok", "--json"])).toBe(0);
  expect(printed(out)).toEqual([JSON.stringify({ run_id: FIRST, result: 42, run_time_ms: 1 })]);
  expect(printed(err)).toEqual([expect.stringMatching(/^Replayed: the answer of run_/)]);
});

it("says that a failure is the first call's, replayed, so that a retry with the same key is not taken for a new failure", async () => {
  expect(await main(["run", "hello", "--idempotency-key", "threw"])).toBe(1);
  expect(printed(err)).toEqual([
    "runlet run: run failed (500): CUDA OOM",
    `Replayed: the answer of ${FIRST}, from the first call with this Idempotency-Key; nothing ran again (a new key runs it again).`,
  ]);
});

it("says a path is not an app's name, and to deploy the folder first", async () => {
  expect(await main(["run", "./examples/hello"])).toBe(1);
  expect(printed(err)).toEqual([
    "runlet run: './examples/hello' is a path: runlet run takes a deployed app's name. Deploy the folder first (runlet deploy ./examples/hello), then runlet run <its name>",
  ]);
});

it("says a function that returned its own status outside 2xx answered it, not that its run failed", async () => {
  expect(await main(["run", "hello", "teapot"])).toBe(1);
  expect(printed(err)).toEqual([
    'runlet run: the function answered 418: {"run_id":"' +
      NEW +
      '","result":{"status_code":418},"run_time_ms":2}',
    `run id: ${NEW}`,
  ]);
});

it("says where a failed run's output is: its logs, where a thrown error's stack is", async () => {
  expect(await main(["run", "hello", "boom"])).toBe(1);
  expect(printed(err)).toEqual([
    "runlet run: run failed (500): CUDA OOM",
    `run id: ${NEW}`,
    `What it wrote: runlet logs ${NEW}`,
  ]);
});

it("offers no run id for a 502 whose control plane was not reached, and no logs where no host took the call", async () => {
  // Both printed `run id:` and `What it wrote: runlet logs …`: a run never made, logs never written.
  for (const fn of ["cp-down", "cp-app"]) {
    err.mockClear();
    expect(await main(["run", "hello", fn])).toBe(1);
    expect(printed(err)).toEqual([expect.stringMatching(/^runlet run: run failed \(502\): /)]);
  }
  // No host took it: its run is listed, failed (runlet status finds it), but wrote nothing.
  err.mockClear();
  expect(await main(["run", "hello", "no-host"])).toBe(1);
  expect(printed(err)).toEqual([
    expect.stringMatching(/^runlet run: run failed \(502\): no runtime host is up/),
    `run id: ${NEW}`,
  ]);
});

it("says that an async call's run is the key's first run, not a new one in the background", async () => {
  expect(await main(["run", "hello", "--async", "--idempotency-key", "ok"])).toBe(0);
  expect(printed(out)).toEqual([FIRST]);
  expect(printed(err)).toEqual([
    `Replayed: this Idempotency-Key was first sent with the same call, so this is that run, ${FIRST}, not a new one (runlet status ${FIRST}); a new key makes a new run.`,
  ]);
});

it("says nothing of a replay for a call that was not one", async () => {
  expect(await main(["run", "hello"])).toBe(0);
  expect(printed(err)).toEqual([`run id: ${NEW}`]);
  err.mockClear();
  expect(await main(["run", "hello", "--async"])).toBe(0);
  expect(printed(err)).toEqual([expect.stringMatching(/^running in the background: /)]);
});

it("prints a custom app's answer to POST /{fn} as the run's result, exit 0 for a 2xx", async () => {
  // It exited 1 saying "web is a custom app: its server answered POST /echo itself (200), not
  // with a function's result", for an app that had answered.
  expect(await main(["run", "web", "echo"])).toBe(0);
  expect(printed(out)).toEqual([JSON.stringify({ echo: {} }, null, 2)]);
  expect(printed(err)).toEqual([`run id: ${NEW}`]);
  out.mockClear();
  err.mockClear();
  expect(await main(["run", "web", "page"])).toBe(0);
  expect(printed(out)).toEqual(["<p>hi</p>"]);
  // --json: its status and body, as a webhook delivery of the run holds them.
  out.mockClear();
  expect(await main(["run", "web", "echo", "--json"])).toBe(0);
  expect(JSON.parse(printed(out)[0] ?? "")).toEqual({
    run_id: NEW,
    status: 200,
    result: { echo: {} },
  });
  // An answer outside 2xx is a failure, said as the app's, exit 1.
  out.mockClear();
  err.mockClear();
  expect(await main(["run", "web"])).toBe(1);
  expect(printed(out)).toEqual([]);
  expect(printed(err)).toEqual([
    'runlet run: web is a custom app: its server answered POST /run with 404: {"message":"not found"} (`runlet run` sends it POST /<function> with --data\'s JSON; send other methods and paths over HTTP: `runlet deploy` printed a curl)',
    `run id: ${NEW}`,
  ]);
  out.mockClear();
  expect(await main(["run", "web", "--json"])).toBe(1);
  expect(JSON.parse(printed(out)[0] ?? "")).toEqual({
    run_id: NEW,
    status: 404,
    result: { message: "not found" },
  });
});

it("prints no run id for an Idempotency-Key refused (422, 409): nothing ran for that call", async () => {
  // It printed `run id: run_…`, the id of a request that made no run.
  for (const [key, status] of [
    ["reused", 422],
    ["running", 409],
  ] as const) {
    err.mockClear();
    expect(await main(["run", "hello", "--idempotency-key", key])).toBe(1);
    expect(printed(err)).toEqual([`runlet run: run failed (${status}): key ${key}`]);
  }
});

it("says an address that answered without a run id is not Runlet's run API, naming RUNLET_API_URL", async () => {
  // The control plane's port given for the Worker's: it said "cp is a custom app: its server
  // answered POST /run itself (404)", and `run id: req_…`.
  const url = process.env.RUNLET_API_URL;
  expect(await main(["run", "cp"])).toBe(1);
  expect(printed(err)).toEqual([
    `runlet run: ${url} (RUNLET_API_URL) is Runlet's control plane (the management API, RUNLET_BASE_URL's), not its run API: it answered 404 {"message":"no route for POST /v4/prj_1/cp/run","code":"not_found"}. Set RUNLET_API_URL to the run API's address, the Worker's (runlet start prints it on its "worker" line)`,
  ]);
  err.mockClear();
  expect(await main(["run", "other", "--json"])).toBe(1);
  expect(JSON.parse(printed(out)[0] ?? "")).toEqual({
    message: `${url} (RUNLET_API_URL) is not Runlet's run API (its answer carries no run id): it answered 200 <html>hi</html>. Set RUNLET_API_URL to the run API's address, the Worker's (runlet start prints it on its "worker" line)`,
  });
  expect(printed(err).join("\n")).not.toMatch(/run id:|custom app/);
});

it("sends an empty body for --data '' (the run API's input null), as for an empty file", async () => {
  // It was refused before anything was sent: "--data is not valid JSON:  (Unexpected end of JSON input)".
  const bodies: string[] = [];
  const api = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => {
      bodies.push(body);
      const answer = { run_id: NEW, result: null, run_time_ms: 1 };
      res.writeHead(200, { "content-type": "application/json", "x-request-id": NEW });
      res.end(JSON.stringify(answer));
    });
  });
  await new Promise<void>((resolve) => api.listen(0, "127.0.0.1", resolve));
  vi.stubEnv("RUNLET_API_URL", `http://127.0.0.1:${(api.address() as AddressInfo).port}`);
  const dir = await mkdtemp(join(tmpdir(), "runlet-run-data-"));
  try {
    await writeFile(join(dir, "empty.json"), "\n");
    expect(await main(["run", "hello", "--data", ""])).toBe(0);
    expect(await main(["run", "hello", "--data", `@${join(dir, "empty.json")}`])).toBe(0);
    expect(await main(["run", "hello", "--data", "null"])).toBe(0);
    expect(bodies).toEqual(["", "", "null"]);
    expect(printed(out)).toEqual(["null", "null", "null"]);
  } finally {
    await new Promise((resolve) => api.close(resolve));
    await rm(dir, { recursive: true, force: true });
  }
});

it("prints a sync 204 with --json as its status and run id, not as an async run's {run_id}", async () => {
  // It printed {"run_id":"run_…"}, an async run's acceptance to a script.
  expect(await main(["run", "hello", "nothing", "--json"])).toBe(0);
  expect(printed(out)).toEqual([
    JSON.stringify({ run_id: NEW, result: null, run_time_ms: null, status: 204 }),
  ]);
  // Without --json, no result is printed; the run id is said on stderr.
  out.mockClear();
  err.mockClear();
  expect(await main(["run", "hello", "nothing"])).toBe(0);
  expect(printed(out)).toEqual([]);
  expect(printed(err)).toEqual([`run id: ${NEW}`]);
  // A 200's and a 202's documents stay as they were: scripts read them.
  out.mockClear();
  expect(await main(["run", "hello", "--json"])).toBe(0);
  expect(await main(["run", "hello", "--async", "--json"])).toBe(0);
  expect(printed(out)).toEqual([
    JSON.stringify({ run_id: NEW, result: 42, run_time_ms: 1 }),
    JSON.stringify({ run_id: NEW }),
  ]);
});

it("says while a sync call runs long, and on Ctrl-C, that the call goes on and where it is listed", async () => {
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const bin = fileURLToPath(new URL("../../bin/runlet.mjs", import.meta.url));
  const env = {
    ...process.env,
    RUNLET_BASE_URL: url,
    RUNLET_API_URL: url,
    RUNLET_PROJECT: "prj_1",
    RUNLET_TOKEN: "t",
  };
  const child = spawn(process.execPath, [bin, "run", "hello", "slow"], { env });
  let stderr = "";
  child.stderr.on("data", (chunk) => {
    stderr += chunk;
  });
  // Once its request has reached the server (the server holds it), Ctrl-C.
  for (let i = 0; i < 100 && !asked.includes("slow"); i++)
    await new Promise((r) => setTimeout(r, 50));
  // A long call is no longer waited for in silence: after 5 s, where to see it.
  const note =
    "(hello: no answer yet, 5 s: it runs, or waits for a free replica; runlet runs --app hello --status running lists it once it runs (its run id for runlet logs -f))";
  for (let i = 0; i < 300 && !stderr.includes(note); i++)
    await new Promise((r) => setTimeout(r, 50));
  expect(stderr).toContain(note);
  child.kill("SIGINT");
  const code = await new Promise((resolve) => child.on("close", resolve));
  expect(code).toBe(130);
  // It exited 130 without a word, while the function ran on to its end.
  expect(stderr).toContain(
    "runlet run: stopped waiting; the call goes on on its runtime host (a sync run cannot be cancelled): runlet runs --app hello --status running lists it once it runs (its run id for runlet logs -f), then with its end.",
  );
});

it("refuses a --webhook that is no http(s) URL before it calls, without the unsigned note", async () => {
  // It said the delivery would go unsigned, then printed the run API's 400 about a
  // "webhookEndpoint" the command line never named.
  for (const bad of ["hooks.example.com/x", "ftp://example.com/x"]) {
    err.mockClear();
    expect(await main(["run", "hello", "--webhook", bad])).toBe(1);
    expect(printed(err)).toEqual([
      `runlet run: --webhook must be an absolute http(s) URL, such as https://example.com/hook (got '${bad}')`,
    ]);
  }
  expect(printed(out)).toEqual([]);
});
