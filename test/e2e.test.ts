import { once } from "node:events";
import { readdir, readFile, stat } from "node:fs/promises";
import { createServer } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, portIsFree } from "../cli/processes.ts";
import {
  cli,
  freePorts,
  type Json,
  json,
  newHome,
  ROOT,
  type Runlet,
  removeHome,
  runletEnv,
  startRunlet,
} from "./harness.ts";
import { nodeRequest } from "./raw-http.ts";

// The three components run for real here: `runlet start` launches the control plane and the
// runtime host under Node and the worker under `wrangler dev` (workerd), on loopback ports.

describe("a local Runlet, end to end", () => {
  let runlet: Runlet;
  let home: string;

  beforeAll(async () => {
    home = await newHome();
    runlet = await startRunlet(home);
  });

  afterAll(async () => {
    await runlet?.stop();
    await removeHome(home);
  });

  const run = (path: string, init: RequestInit = {}) =>
    fetch(`${runlet.local.apiUrl}/v4/${runlet.local.projectId}${path}`, {
      method: "POST",
      body: "{}",
      ...init,
      headers: {
        authorization: `Bearer ${runlet.local.token}`,
        "content-type": "application/json",
        ...(init.headers as Record<string, string>),
      },
    });

  /** Deploys a bundle through the management API; `files` maps paths to their text. */
  const deployFiles = (files: Record<string, string>) =>
    fetch(`${runlet.local.baseUrl}/v2/projects/${runlet.local.projectId}/apps`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${runlet.local.token}`,
        "content-type": "application/json",
      },
      body: JSON.stringify({
        files: Object.entries(files).map(([path, text]) => ({
          path,
          contentBase64: Buffer.from(text).toString("base64"),
        })),
      }),
    });

  it("bootstraps local.json (mode 0600) with the addresses, project and owner token", async () => {
    const file = join(home, "local.json");
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(runlet.local.baseUrl).toBe(`http://127.0.0.1:${runlet.ports.control}`);
    expect(runlet.local.apiUrl).toBe(`http://127.0.0.1:${runlet.ports.api}`);
    expect(runlet.local.projectId).toMatch(/^prj_/);
    expect(runlet.local.token.split(".")).toHaveLength(3);
  });

  it("refuses a second runlet start on the same home, even on other ports, and changes nothing", async () => {
    const before = await readFile(join(home, "local.json"), "utf8");
    const [control, api, host] = [await freePort(), await freePort(), await freePort()];
    const second = await cli(["start"], {
      ...runlet.env,
      RUNLET_CONTROL_PORT: String(control),
      RUNLET_API_PORT: String(api),
      RUNLET_HOST_PORT: String(host),
    });
    expect(second.code).toBe(1);
    expect(second.stderr).toContain(`another runlet start (pid ${runlet.process.pid}) is using`);
    expect(await readFile(join(home, "local.json"), "utf8")).toBe(before);
  });

  it("keeps the internal token out of every log of the stack", async () => {
    const token = (await readFile(join(home, "internal-token"), "utf8")).trim();
    const logs = await readdir(join(home, "logs"));
    expect(logs.length).toBeGreaterThan(0);
    for (const name of logs) {
      const text = await readFile(join(home, "logs", name), "utf8");
      expect(text.includes(token.slice(0, 12)), `${name} shows the internal token`).toBe(false);
    }
  });

  it("begins each line of a component's log with its time (ISO 8601, UTC)", async () => {
    for (const name of ["control-plane.log", "worker.log", "runtime-host.log"]) {
      const lines = (await readFile(join(home, "logs", name), "utf8")).split("\n").slice(0, -1);
      expect(lines.length, `${name} has lines`).toBeGreaterThan(0);
      for (const line of lines)
        expect(line, `a line of ${name}`).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z /);
    }
  });

  it("deploys examples/hello with the CLI and runs it through the worker", async () => {
    const deployed = await cli(["deploy", "examples/hello"], runlet.env);
    expect(deployed.stderr).toContain("Packing hello");
    expect(deployed.stdout).toMatch(/Deployed hello v1 \(managed runtime\)/);
    expect(deployed.code).toBe(0);

    const ran = await cli(["run", "hello", "--data", '{"name":"Ada"}', "--json"], runlet.env);
    expect(ran.code).toBe(0);
    const body = JSON.parse(ran.stdout);
    expect(body.result.greeting).toBe("Hello, Ada!");
    expect(body.run_id).toMatch(/^run_/);
  });

  it("answers a run with {run_id, result, run_time_ms} and X-Request-Id = run_id", async () => {
    const res = await run("/hello/run", { body: JSON.stringify({ name: "Grace" }) });
    expect(res.status).toBe(200);
    const body = await json(res);
    expect(Object.keys(body).sort()).toEqual(["result", "run_id", "run_time_ms"]);
    expect(res.headers.get("x-request-id")).toBe(body.run_id);
    // The function saw the same run id as the caller got back.
    expect(body.result).toEqual({ greeting: "Hello, Grace!", runId: body.run_id });
    expect(typeof body.run_time_ms).toBe("number");
  });

  it("lists the runs it served in the runs index, with their outcome", async () => {
    const ok = await json(await run("/hello/run"));
    const failed = await json(await run("/hello/fail"));
    const runsUrl = `${runlet.local.baseUrl}/v2/projects/${runlet.local.projectId}/runs?app=hello`;
    let listed: Json["runs"] = [];
    // The Worker reports after answering (waitUntil): allow it a moment, boundedly.
    for (let i = 0; i < 50; i++) {
      const res = await fetch(runsUrl, {
        headers: { authorization: `Bearer ${runlet.local.token}` },
      });
      listed = (await json(res)).runs;
      if (listed.some((r: Json) => r.id === failed.run_id)) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const byId = new Map(listed.map((r: Json) => [r.id, r]));
    expect(byId.get(ok.run_id)).toMatchObject({ function: "run", status: "success", async: false });
    expect(byId.get(failed.run_id)).toMatchObject({ function: "fail", status: "failure" });
  });

  it("lists a long sync run as running while its caller waits, then with its end", async () => {
    // It was listed nowhere until it ended: a 4-minute call could not be seen or followed.
    const naps = await deployFiles({
      "runlet.toml": 'name = "naps"\nruntime = "managed"\n',
      "main.mjs": "export const run = (ms) => new Promise((r) => setTimeout(() => r(ms), ms));",
    });
    expect(naps.status).toBe(201);
    const call = run("/naps/run", { body: "3000" });
    const listed = async (status: string) => {
      const url = `${runlet.local.baseUrl}/v2/projects/${runlet.local.projectId}/runs?app=naps&status=${status}`;
      const res = await fetch(url, { headers: { authorization: `Bearer ${runlet.local.token}` } });
      return (await json(res)).runs as Json[];
    };
    let running: Json[] = [];
    for (let i = 0; i < 50 && running.length === 0; i++) {
      if (i) await new Promise((r) => setTimeout(r, 100));
      running = await listed("running");
    }
    expect(running).toHaveLength(1);
    expect(running[0]).toMatchObject({ async: false, function: "run", host: expect.any(String) });
    const answered = await call;
    expect(answered.status).toBe(200);
    const runId = (await json(answered)).run_id;
    expect(running[0]?.id).toBe(runId);
    let ended: Json[] = [];
    for (let i = 0; i < 50 && ended.length === 0; i++) {
      if (i) await new Promise((r) => setTimeout(r, 100));
      ended = await listed("success");
    }
    expect(ended.map((r) => r.id)).toEqual([runId]);
    // Gone again: the cases after this one count the project's apps.
    expect((await cli(["apps", "delete", "naps"], runlet.env)).code).toBe(0);
  });

  it("maps status_code, throws, unknown exports, unknown apps and bad tokens", async () => {
    expect((await run("/hello/teapot")).status).toBe(418);

    const failed = await run("/hello/fail", { body: JSON.stringify({ message: "no luck" }) });
    expect(failed.status).toBe(500);
    const failure = await json(failed);
    expect(failure.error).toEqual({ message: "no luck" });
    expect(JSON.stringify(failure)).not.toMatch(/at .*\.m?js|runtime-host/);
    // Its view says why, as the caller was told (the runs index keeps the message).
    const viewUrl = `${runlet.local.apiUrl}/v4/${runlet.local.projectId}/hello/runs/${failure.run_id}`;
    let view: Json = {};
    for (let i = 0; i < 50 && view.status !== "failure"; i++) {
      if (i) await new Promise((r) => setTimeout(r, 100)); // the host reports in batches
      view = await json(
        await fetch(viewUrl, { headers: { authorization: `Bearer ${runlet.local.token}` } }),
      );
    }
    expect(view).toMatchObject({ status: "failure", error: { message: "no luck" } });

    const noExport = await run("/hello/nope");
    expect(noExport.status).toBe(404);
    expect((await json(noExport)).message).toMatch(/no function 'nope'/);

    const noApp = await run("/ghost/run");
    expect(noApp.status).toBe(404);
    expect((await json(noApp)).message).toMatch(/ghost/);

    const anonymous = await fetch(`${runlet.local.apiUrl}/v4/${runlet.local.projectId}/hello/run`, {
      method: "POST",
    });
    expect(anonymous.status).toBe(401);
    expect(await json(anonymous)).toMatchObject({ message: "missing Authorization header" });

    const forged = await run("/hello/run", {
      headers: { authorization: `Bearer ${runlet.local.token.slice(0, -4)}AAAA` },
    });
    expect(forged.status).toBe(401);
  });

  it("keeps how long a sync run ran before its process died, in the runs index and its view", async () => {
    // Both showed run_time_ms null (TIME "-" in runlet runs) though the run had run.
    const managed = await deployFiles({
      "runlet.toml": 'name = "dies"\nruntime = "managed"\n',
      "main.mjs":
        "export const run = () => new Promise(() => setTimeout(() => process.exit(3), 50));",
    });
    expect(managed.status).toBe(201);
    const custom = await deployFiles({
      "runlet.toml": [
        'name = "dies-http"',
        'runtime = "custom"',
        "[custom]",
        'entrypoint = ["node", "server.js"]',
      ].join("\n"),
      "server.js": `require("node:http").createServer((req, res) => {
  if (req.url === "/health") return res.end("ok");
  setTimeout(() => process.exit(3), 50);
}).listen(Number(process.env.PORT), "127.0.0.1");`,
    });
    expect(custom.status).toBe(201);
    const died = await run("/dies/run");
    expect(died.status).toBe(502);
    const diedHttp = await run("/dies-http/go");
    expect(diedHttp.status).toBe(502);
    expect((await json(diedHttp)).message).toMatch(/^the app's process exited \(code 3\)/);
    for (const [app, res] of [
      ["dies", died],
      ["dies-http", diedHttp],
    ] as const) {
      const runId = res.headers.get("x-request-id") as string;
      const viewUrl = `${runlet.local.apiUrl}/v4/${runlet.local.projectId}/${app}/runs/${runId}`;
      let view: Json = {};
      for (let i = 0; i < 50 && view.status !== "failure"; i++) {
        if (i) await new Promise((r) => setTimeout(r, 100)); // reported after the answer
        view = await json(
          await fetch(viewUrl, { headers: { authorization: `Bearer ${runlet.local.token}` } }),
        );
      }
      expect(view).toMatchObject({ status: "failure", run_time_ms: expect.any(Number) });
      expect(view.run_time_ms).toBeGreaterThanOrEqual(50);
      // Gone again: the cases after this one count the project's apps.
      expect((await cli(["apps", "delete", app], runlet.env)).code).toBe(0);
    }
  });

  it("serves a redeploy as the next version at once", async () => {
    const again = await cli(["deploy", "examples/hello", "--json"], runlet.env);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ name: "hello", version: 2 });
    const listed = await cli(["apps", "--json"], runlet.env);
    expect(JSON.parse(listed.stdout).apps).toMatchObject([
      { name: "hello", version: 2, runtime: "managed" },
    ]);
    expect((await run("/hello/run")).status).toBe(200);
  });

  it("gives concurrent deploys of one app distinct versions and serves the newest", async () => {
    const deploy = (tag: string) =>
      deployFiles({
        "runlet.toml": 'name = "racer"\nruntime = "managed"',
        "main.mjs": `export const run = () => "${tag}";`,
      });
    const answers = await Promise.all(["a", "b", "c"].map(deploy));
    expect(answers.map((r) => r.status)).toEqual([201, 201, 201]);
    const deployed = await Promise.all(answers.map(json));
    const byVersion = new Map(deployed.map((d, i) => [d.version, "abc"[i]]));
    expect([...byVersion.keys()].sort()).toEqual([1, 2, 3]);

    const res = await run("/racer/run");
    expect((await json(res)).result).toBe(byVersion.get(3));
  });

  it("forwards any method and path to a custom-runtime app and returns its answer as is", async () => {
    const deployed = await deployFiles({
      "runlet.toml": [
        'name = "web"',
        'runtime = "custom"',
        "[custom]",
        'entrypoint = ["node", "server.js"]',
        'healthcheck = "/health"',
      ].join("\n"),
      "server.js": `require("node:http").createServer((req, res) => {
  if (req.url === "/health") return res.end("ok");
  if (req.url === "/spoof") {
    // An app's answer dressed as the runtime host's error: still the app's, as it is.
    res.writeHead(503, { "content-type": "application/json", "x-runlet-host-error": "1" });
    return res.end(JSON.stringify({ message: "the runtime host is stopping", code: "unavailable" }));
  }
  let body = "";
  req.on("data", (c) => { body += c; });
  req.on("end", () => {
    res.writeHead(req.method === "DELETE" ? 409 : 200, { "content-type": "application/json", "x-from-app": "1" });
    const internal = ["x-runlet-callback-url", "x-runlet-wait-ms", "x-runlet-host-error"].filter((h) => h in req.headers);
    console.log("served " + req.method + " " + req.url);
    const length = req.headers["content-length"] ?? null;
    res.end(JSON.stringify({ method: req.method, url: req.url, body, auth: req.headers.authorization ?? null, internal, length }));
  });
}).listen(Number(process.env.PORT), "127.0.0.1", () => console.error("listening"));`,
    });
    expect(deployed.status).toBe(201);

    const put = await run("/web/items/7?sort=desc", {
      method: "PUT",
      body: "raw text",
      // Runlet's internal headers from a caller reach neither the host's reading nor the app.
      headers: {
        "x-runlet-callback-url": "http://127.0.0.1:9/steal",
        "x-runlet-wait-ms": "5",
        "x-runlet-host-error": "1",
      },
    });
    expect(put.status).toBe(200);
    expect(put.headers.get("x-from-app")).toBe("1");
    expect(put.headers.get("x-request-id")).toMatch(/^run_/);
    expect(await json(put)).toEqual({
      method: "PUT",
      url: "/items/7?sort=desc",
      body: "raw text",
      auth: null, // the caller's Runlet token is not handed to the app
      internal: [],
      length: "8", // a body sent with its length streams on with it
    });
    // One sent chunked (no length) is read whole in the Worker, and reaches the app with one:
    // a stream cut at 10 MiB had reached it as a shorter body, and some servers refuse chunks.
    const chunked = await nodeRequest(
      `${runlet.local.apiUrl}/v4/${runlet.local.projectId}/web/chunks`,
      { method: "POST", headers: { authorization: `Bearer ${runlet.local.token}` } },
      (req) => {
        req.write("first ");
        req.end("second");
      },
    );
    expect(chunked.status).toBe(200);
    expect(JSON.parse(chunked.body)).toMatchObject({ body: "first second", length: "12" });
    const spoof = await run("/web/spoof", { method: "GET", body: undefined });
    expect(spoof.status).toBe(503);
    expect(spoof.headers.get("x-runlet-host-error")).toBeNull();
    expect(await json(spoof)).toEqual({
      message: "the runtime host is stopping",
      code: "unavailable",
    });
    // What curl sends with any body over 1 MiB: the Worker takes the body and answers the
    // continue itself; the app's answer is the caller's (it was a 500 once the host saw it).
    const big = "x".repeat(2 * 1024 * 1024);
    const continued = await nodeRequest(
      `${runlet.local.apiUrl}/v4/${runlet.local.projectId}/web/big`,
      {
        method: "POST",
        headers: {
          authorization: `Bearer ${runlet.local.token}`,
          expect: "100-continue",
          "content-length": String(big.length),
        },
      },
      (req) => req.end(big), // without waiting for 100 Continue, as curl does after a second
    );
    expect(continued.status).toBe(200);
    expect(JSON.parse(continued.body)).toMatchObject({ method: "POST", url: "/big" });
    expect(JSON.parse(continued.body).body).toHaveLength(big.length);
    const del = await run("/web", { method: "DELETE", body: undefined });
    expect(del.status).toBe(409);
    expect((await json(del)).url).toBe("/");
    // Its view (from the runs index: no webhook) says how the app answered.
    const delUrl = `${runlet.local.apiUrl}/v4/${runlet.local.projectId}/web/runs/${del.headers.get("x-request-id")}`;
    let delView: Json = {};
    for (let i = 0; i < 50 && delView.status !== "success"; i++) {
      if (i) await new Promise((r) => setTimeout(r, 100)); // the host reports in batches
      const auth = { authorization: `Bearer ${runlet.local.token}` };
      delView = await json(await fetch(delUrl, { headers: auth }));
    }
    expect(delView).toMatchObject({ status: "success", function: "DELETE /", status_code: 409 });

    // What its server wrote, which no run's log has: the app's output, through the API and CLI.
    const output = await cli(["logs", "--app", "web", "--json"], runlet.env);
    expect(output.code).toBe(0);
    const [replica] = JSON.parse(output.stdout).replicas;
    expect(replica).toMatchObject({ version: 1, state: "running", host: expect.any(String) });
    const lines = replica.lines.map(
      (l: { stream: string; text: string }) => `${l.stream} ${l.text}`,
    );
    expect(lines).toEqual(
      expect.arrayContaining(["stderr listening", "stdout served PUT /items/7?sort=desc"]),
    );
    const printed = await cli(["logs", "--app", "web"], runlet.env);
    expect(printed.stdout).toMatch(/^== replica \d+ of v1 on .+: running, since /);
    expect(printed.stdout).toContain("stdout  served DELETE /");
    // `runlet run` of a custom app: the app gets POST /items with --data's JSON, and its answer
    // is the run's result, printed as it wrote it, exit 0 (it exited 1 for the app's 200).
    const ranCustom = await cli(["run", "web", "items"], runlet.env);
    expect(ranCustom.code, ranCustom.stderr).toBe(0);
    expect(JSON.parse(ranCustom.stdout)).toMatchObject({
      method: "POST",
      url: "/items",
      body: "{}",
    });
    expect(ranCustom.stderr.trim()).toMatch(/^run id: run_\w+$/);
    const unknown = await cli(["logs", "--app", "nope"], runlet.env);
    expect([unknown.code, unknown.stderr]).toEqual([
      1,
      expect.stringContaining("'nope' is not deployed"),
    ]);

    // A managed app still only takes POST /{function}.
    const get = await run("/hello/run", { method: "GET", body: undefined });
    expect(get.status).toBe(405);
    expect((await json(get)).message).toMatch(/runs functions: POST/);
  });

  it("closes a custom app's stream when its caller leaves, freeing the replica's one slot", async () => {
    const deployed = await deployFiles({
      "runlet.toml": [
        'name = "ticker"',
        'runtime = "custom"',
        "[custom]",
        'entrypoint = ["node", "server.js"]',
        'healthcheck = "/health"',
        "[scaling]",
        "max_replicas = 1",
        "replica_concurrency = 1",
      ].join("\n"),
      "server.js": `let closed = 0;
require("node:http").createServer((req, res) => {
  if (req.url === "/health") return res.end("ok");
  if (req.url === "/closed") return res.end(String(closed));
  res.writeHead(200, { "content-type": "text/event-stream" });
  const tick = setInterval(() => res.write("data: tick\\n\\n"), 100);
  res.on("close", () => { clearInterval(tick); closed++; });
}).listen(Number(process.env.PORT), "127.0.0.1");`,
    });
    expect(deployed.status).toBe(201);
    const caller = new AbortController();
    const events = await run("/ticker/events", {
      method: "GET",
      body: undefined,
      signal: caller.signal,
    });
    const reader = (events.body as ReadableStream<Uint8Array>).getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toMatch(/^data: tick/);
    caller.abort();
    // The one slot is free again (else this waits its 30 s and is refused), and the app saw its
    // request end.
    let closed = "0";
    for (let i = 0; i < 50 && closed === "0"; i++) {
      const res = await run("/ticker/closed", { method: "GET", body: undefined });
      expect(res.status).toBe(200);
      closed = await res.text();
    }
    expect(closed).toBe("1");
  });

  it("streams a custom app's text answer as it is written to a caller that accepts gzip", async () => {
    // The app writes a first token, then waits until told to go on (or 10 s): an answer held
    // until its end (the edge compressing it) gave the caller nothing before then.
    const deployed = await deployFiles({
      "runlet.toml": [
        'name = "tokens"',
        'runtime = "custom"',
        "[custom]",
        'entrypoint = ["node", "server.js"]',
        "[scaling]",
        "max_replicas = 1",
        "replica_concurrency = 2",
      ].join("\n"),
      "server.js": `let go;
const told = new Promise((resolve) => { go = resolve; });
require("node:http").createServer((req, res) => {
  if (req.url === "/health") return res.end("ok");
  if (req.url === "/go") return res.end(go("told"));
  res.writeHead(200, { "content-type": "text/plain; charset=utf-8" });
  res.write("first\\n");
  const late = new Promise((resolve) => setTimeout(resolve, 10_000, "late"));
  Promise.race([told, late]).then((word) => res.end(word + "\\n"));
}).listen(Number(process.env.PORT), "127.0.0.1");`,
    });
    expect(deployed.status).toBe(201);
    const get = { method: "GET", body: undefined, headers: { "accept-encoding": "gzip, br" } };
    const answer = await run("/tokens/stream", get);
    const reader = (answer.body as ReadableStream<Uint8Array>).getReader();
    const text = new TextDecoder();
    expect(text.decode((await reader.read()).value)).toBe("first\n");
    expect((await run("/tokens/go", get)).status).toBe(200);
    let rest = "";
    for (let r = await reader.read(); !r.done; r = await reader.read())
      rest += text.decode(r.value);
    expect(rest).toBe("told\n");
  });

  it("deletes an app with the CLI: its calls are 404 and it is no longer listed", async () => {
    expect((await run("/racer/run")).status).toBe(200);
    const deleted = await cli(["apps", "delete", "racer"], runlet.env);
    expect(deleted.code).toBe(0);
    expect(deleted.stdout).toMatch(/Deleted racer/);
    const res = await run("/racer/run");
    expect(res.status).toBe(404);
    const listed = await cli(["apps", "--json"], runlet.env);
    expect(JSON.parse(listed.stdout).apps.map((a: { name: string }) => a.name)).not.toContain(
      "racer",
    );
    const again = await cli(["apps", "delete", "racer"], runlet.env);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/deleting the app failed \(404\)/);
  });

  it("refuses a bundle with a broken runlet.toml with a clear 400, deploying nothing", async () => {
    const res = await deployFiles({ "runlet.toml": 'name = "Bad Name"' });
    expect(res.status).toBe(400);
    expect((await json(res)).message).toMatch(/^runlet.toml: name: /);
    const listed = await cli(["apps", "--json"], runlet.env);
    expect(JSON.parse(listed.stdout).apps.map((a: { name: string }) => a.name)).not.toContain(
      "Bad Name",
    );
  });

  // Last here: it retires the key of local.json's first token, which the tests above use.
  it("rotates the signing key with overlap: tokens signed before work until their key is retired", async () => {
    const account = async (name: string) => {
      const made = await cli(
        ["tokens", "create", "--name", name, "--expires", "1d", "--json"],
        runlet.env,
      );
      expect(made.code).toBe(0);
      return JSON.parse(made.stdout).token as string;
    };
    const runAs = (token: string) =>
      run("/hello/run", { headers: { authorization: `Bearer ${token}` } });
    const [early, late] = [await account("before-1"), await account("before-2")];
    // A call with a key it has never seen makes the Worker fetch the JWKS now (before the
    // rotation): until 2026-11-26 it then refused the new key's tokens for 10 s.
    const stranger = `${Buffer.from('{"alg":"ES256","kid":"nobody"}').toString("base64url")}.e30.AAAA`;
    expect((await runAs(stranger)).status).toBe(401);

    const rotated = await cli(["keys", "rotate"], runlet.env);
    expect(rotated.stderr).toContain("Rotating the signing key of");
    expect(rotated.stdout).toMatch(/^Tokens are signed with \S+ from now on\./);
    expect(rotated.code).toBe(0);
    const fresh = await account("after");
    expect((await runAs(fresh)).status).toBe(200);
    expect((await runAs(early)).status).toBe(200);
    expect((await runAs(runlet.local.token)).status).toBe(200);

    const listed = JSON.parse((await cli(["keys", "--json"], runlet.env)).stdout);
    const old = listed.keys.find((k: Json) => k.state === "previous").kid;
    const retired = await cli(["keys", "retire", old], runlet.env);
    expect(retired.stdout, retired.stderr).toMatch(
      new RegExp(`^Retired ${old}: tokens signed with it are refused`),
    );
    expect(retired.code).toBe(0);
    const refused = await runAs(late);
    expect(refused.status).toBe(401);
    expect((await json(refused)).message).toMatch(
      new RegExp(`^token was signed by key ${old}, which was retired at .*: ask for a new token$`),
    );
    expect((await runAs(fresh)).status).toBe(200);
    // The local owner's token in local.json was renewed with the new key: the CLI goes on.
    runlet.local = JSON.parse(await readFile(join(home, "local.json"), "utf8"));
    expect((await runAs(runlet.local.token)).status).toBe(200);
    expect((await cli(["keys"], runlet.env)).stdout).toMatch(new RegExp(`${old}\\s+retired`));
  });
});

describe("starting and stopping", () => {
  it("restarts on the same state and credentials, and leaves no port bound, stopped by its supervisor going or by Ctrl-C", async () => {
    const home = await newHome();
    try {
      const first = await startRunlet(home);
      const deployed = await cli(["deploy", "examples/hello"], first.env);
      expect(deployed.code).toBe(0);
      // Its supervisor's pipe closed (README, RUNLET_SUPERVISED): it stops as on SIGTERM.
      first.process.stdin?.end();
      const [code] = await Promise.race([
        once(first.process, "exit"),
        new Promise<unknown[]>((resolve) => setTimeout(resolve, 30_000, ["still running"])),
      ]);
      expect(code).toBe(0);
      for (const port of Object.values(first.ports))
        expect(await portIsFree(port, "127.0.0.1")).toBe(true);

      const second = await startRunlet(home, first.ports);
      try {
        expect(second.local).toEqual(first.local);
        // The app deployed before the restart still answers, with the old token.
        const res = await fetch(`${second.local.apiUrl}/v4/${second.local.projectId}/hello/run`, {
          method: "POST",
          headers: { authorization: `Bearer ${first.local.token}` },
          body: '{"name":"again"}',
        });
        expect(res.status).toBe(200);
        expect((await json(res)).result.greeting).toBe("Hello, again!");
      } finally {
        second.process.kill("SIGINT");
        expect(await second.stop()).toBe(0);
      }
      for (const port of Object.values(second.ports))
        expect(await portIsFree(port, "127.0.0.1")).toBe(true);
    } finally {
      await removeHome(home);
    }
  });

  it("says which port is taken and what to do, in one line", async () => {
    const home = await newHome();
    const ports = await freePorts();
    const blocker = createServer().listen(ports.control, "127.0.0.1");
    await new Promise((r) => blocker.once("listening", r));
    try {
      const result = await cli(["start"], runletEnv(home, ports));
      expect(result.code).toBe(1);
      expect(result.stderr.trim()).toBe(
        `runlet start: port ${ports.control} on 127.0.0.1 is already in use: stop what holds it, or set RUNLET_CONTROL_PORT to a free port`,
      );
    } finally {
      blocker.close();
      await removeHome(home);
    }
  });

  it("refuses one port for two components before it starts anything", async () => {
    const home = await newHome();
    const ports = await freePorts();
    try {
      const result = await cli(["start"], runletEnv(home, { ...ports, api: ports.control }));
      expect(result.code).toBe(1);
      expect(result.stderr.trim()).toBe(
        `runlet start: bad setting: RUNLET_CONTROL_PORT and RUNLET_API_PORT are both ${ports.control}: each component needs a port of its own`,
      );
      expect(result.stdout).toBe("");
    } finally {
      await removeHome(home);
    }
  });

  // Every command's --help is checked in-process (cli/main.test.ts); here, through bin/runlet.mjs.
  it("prints --help through the runlet command", async () => {
    for (const command of ["start", "keys"]) {
      const help = await cli([command, "--help"], {
        ...process.env,
        RUNLET_HOME: join(ROOT, ".no-home"),
      });
      expect(help.code).toBe(0);
      expect(help.stdout).toMatch(new RegExp(`^Usage: runlet ${command}`));
    }
    const top = await cli(["--help"], process.env);
    expect(top.stdout).toContain("deploy");
    expect(await readFile(join(ROOT, "package.json"), "utf8")).toContain(
      '"runlet": "bin/runlet.mjs"',
    );
  });
});
