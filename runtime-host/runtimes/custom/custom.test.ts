// The custom runtime through the real host: the app's own server, started from its entrypoint
// with PORT, ready by its healthcheck, every part of a request forwarded and the answer streamed
// back unchanged; failures are the host's `{message}` errors, marked as such.

import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { appRoot, appsRoot, versionDirName } from "../../../common/app-paths.ts";
import { HEADER } from "../../../common/consts.ts";
import type { RunningHost } from "../../server.ts";
import {
  configOf,
  eventually,
  hostClient,
  isGone,
  newHome,
  removeHome,
  startTestHost,
  TOKEN,
} from "../../test-support.ts";
import { launchScript } from "./launch.ts";

const SERVER = `
const http = require("node:http");
let healthy = false;
setTimeout(() => { healthy = true; }, 150); // ready some time after listening
http.createServer((req, res) => {
  if (req.url === "/health") {
    res.writeHead(healthy ? 200 : 503).end();
    return;
  }
  if (req.url.startsWith("/stream")) {
    res.writeHead(200, { "content-type": "text/plain", "x-app": "yes" });
    res.write("one\\n");
    setTimeout(() => res.end("two\\n"), 50);
    return;
  }
  if (req.url === "/crash") process.exit(9);
  if (req.url === "/write") require("node:fs").writeFileSync("out.txt", "written by the app");
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    res.writeHead(req.url === "/teapot" ? 418 : 201, {
      "content-type": "application/json",
      "set-cookie": ["a=1", "b=2"],
    });
    res.end(JSON.stringify({
      method: req.method,
      url: req.url,
      body: Buffer.concat(chunks).toString(),
      header: req.headers["x-custom"] ?? null,
      authorization: req.headers.authorization ?? null,
      runId: req.headers["x-runlet-run-id"] ?? null,
      port: process.env.PORT,
      pid: process.pid,
      cwd: process.cwd(),
    }));
  });
}).listen(Number(process.env.PORT), "127.0.0.1");
`;

const CONFIG = configOf("web", {
  runtime: "custom",
  custom: { entrypoint: ["node", "server.js"], healthcheck: "/health" },
});

let home: string;
let host: RunningHost;

beforeEach(async () => {
  home = await newHome();
  host = await startTestHost(home, { limits: { startTimeoutMs: 5_000 } });
});

afterEach(async () => {
  await host.close();
  await removeHome(home);
});

type Json = Record<string, unknown>;
const json = async (res: Response) => (await res.json()) as Json;

const send = (path: string, init: RequestInit = {}) =>
  fetch(`${host.url}/internal/http/p/web${path}`, {
    ...init,
    headers: { authorization: `Bearer ${TOKEN}`, [HEADER.runId]: "run_c", ...init.headers },
  });

describe("custom runtime", () => {
  it("forwards method, path, query, headers and body, and returns the answer unchanged", async () => {
    expect(
      (await hostClient(host.url).deploy("p", "web", 1, { "server.js": SERVER }, CONFIG)).status,
    ).toBe(200);
    const res = await send("/things/42?x=1&y=%20two", {
      method: "PUT",
      headers: { "x-custom": "kept", "content-type": "text/plain" },
      body: "payload",
    });
    expect(res.status).toBe(201);
    expect(res.headers.get(HEADER.hostError)).toBeNull();
    expect(res.headers.getSetCookie()).toEqual(["a=1", "b=2"]);
    const body = await json(res);
    expect(body).toMatchObject({
      method: "PUT",
      url: "/things/42?x=1&y=%20two",
      body: "payload",
      header: "kept",
      authorization: null, // the host's token never reaches the app
      runId: "run_c",
    });
    expect(Number(body.port)).toBeGreaterThan(0);

    const teapot = await send("/teapot", { method: "DELETE" });
    expect(teapot.status).toBe(418);
    expect((await send("?only=query")).status).toBe(201);
  });

  it("streams the answer as the app writes it", async () => {
    await hostClient(host.url).deploy("p", "web", 1, { "server.js": SERVER }, CONFIG);
    const res = await send("/stream");
    expect(res.headers.get("x-app")).toBe("yes");
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toBe("one\n"); // before the app wrote "two"
    let rest = "";
    for (let r = await reader.read(); !r.done; r = await reader.read()) {
      rest += new TextDecoder().decode(r.value);
    }
    expect(rest).toBe("two\n");
  });

  it("answers 502 {message} when the app crashes mid-request, then starts a new replica", async () => {
    await hostClient(host.url).deploy("p", "web", 1, { "server.js": SERVER }, CONFIG);
    const before = (await json(await send("/"))).pid as number;
    const crashed = await send("/crash");
    expect(crashed.status).toBe(502);
    expect(crashed.headers.get(HEADER.hostError)).toBe("1");
    expect((await json(crashed)).message).toMatch(
      /^the app's process exited \(code 9\) before it answered \(ECONNRESET\); its output \(runlet logs --app web\)/,
    );
    const after = (await json(await send("/"))).pid as number;
    expect(after).not.toBe(before);
    expect(isGone(before)).toBe(true);
  });

  it("answers 502 with the app's last words when it exits before it is healthy", async () => {
    const broken = { "server.js": 'console.error("missing DATABASE_URL"); process.exit(1);' };
    await hostClient(host.url).deploy("p", "web", 1, broken, CONFIG);
    const res = await send("/");
    expect(res.status).toBe(502);
    expect((await json(res)).message).toMatch(
      /exited before it was healthy \(code 1\): missing DATABASE_URL/,
    );
    // An uncaught error: its line, not the version Node prints last.
    await hostClient(host.url).deploy(
      "p",
      "web",
      2,
      { "server.js": 'JSON.parse("{bad");' },
      CONFIG,
    );
    const thrown = await json(await send("/"));
    expect(thrown.message).toMatch(/exited before it was healthy \(code 1\): SyntaxError: /);
  });

  it("says what its healthcheck answered, or asks whether it listens on PORT, when it is never healthy", async () => {
    // Any free port but PORT (PORT + 1 was once taken by another test file's process).
    const elsewhere = `require("node:http").createServer((q, s) => s.end("up"))
  .listen(0, "127.0.0.1");`;
    await hostClient(host.url).deploy("p", "web", 1, { "server.js": elsewhere }, CONFIG);
    const res = await send("/");
    expect(res.status).toBe(502);
    expect((await json(res)).message).toMatch(
      /\/health did not answer 2xx within 5 s, the app's start_timeout \(runlet\.toml\) \(last, no answer: does it listen on PORT \(\d+\)\?\)/,
    );
    const unwell = `require("node:http").createServer((q, s) => { s.statusCode = 503; s.end(); })
  .listen(Number(process.env.PORT), "127.0.0.1");`;
    await hostClient(host.url).deploy("p", "web", 2, { "server.js": unwell }, CONFIG);
    expect((await json(await send("/"))).message).toMatch(/\(last, it answered 503\)/);
  });

  it("says that a server still loading when the start limit came must listen first, not that PORT is wrong", async () => {
    // A model loaded before the server listens: it read "does it listen on PORT (…)?".
    const loading = `console.log("loading model..."); setTimeout(() => {}, 60_000);`;
    await hostClient(host.url).deploy("p", "web", 1, { "server.js": loading }, CONFIG);
    const res = await send("/");
    expect(res.status).toBe(502);
    expect((await json(res)).message).toMatch(
      /^the app failed to start: nothing answered \/health on PORT \(\d+\) within 5 s, the app's start_timeout \(runlet\.toml\), while its process ran \(its last output: "loading model\.\.\."\): a server that loads a model or data first must answer within 5 s: raise start_timeout \(at most 1800 s\), or listen at once and load in a background thread, with requests waiting for it \(docs\/api\.md, "Slow starts"\); or it listens on another port than PORT/,
    );
  });

  it("gives a server its app's start_timeout to get healthy, not the host's limit", async () => {
    await host.close();
    host = await startTestHost(home, { limits: { startTimeoutMs: 1_000 } });
    // Listens about 2 s after it starts, as a server that loads a model first does.
    const slow = `console.log("loading model...");
setTimeout(() => require("node:http").createServer((q, s) => s.end("loaded"))
  .listen(Number(process.env.PORT), "127.0.0.1"), 2_000);`;
    const withLimit = (start_timeout: number) => configOf("web", { ...CONFIG, start_timeout });
    const client = hostClient(host.url);
    await client.deploy("p", "web", 1, { "server.js": slow }, withLimit(1));
    const refused = await send("/");
    expect(refused.status).toBe(502);
    expect((await json(refused)).message).toMatch(
      /^the app failed to start: nothing answered \/health on PORT \(\d+\) within 1 s, the app's start_timeout \(runlet\.toml\), while its process ran/,
    );
    await client.deploy("p", "web", 2, { "server.js": slow }, withLimit(5));
    const res = await send("/");
    expect([res.status, await res.text()]).toEqual([200, "loaded"]);
  });

  it("says at once that its healthcheck path is not served, rather than after the start timeout", async () => {
    // A server with routes of its own and no /health: 404 (as Python's http.server answers).
    const noHealth = `require("node:http").createServer((q, s) => { s.statusCode = q.url === "/" ? 200 : 404; s.end(); })
  .listen(Number(process.env.PORT), "127.0.0.1");`;
    await hostClient(host.url).deploy("p", "web", 1, { "server.js": noHealth }, CONFIG);
    const res = await send("/");
    expect(res.status).toBe(502);
    expect((await json(res)).message).toBe(
      "the app failed to start: its healthcheck /health answered 404: serve GET /health with a 2xx, or set [custom] healthcheck to a path it answers",
    );
  });

  it("starts a cold app in a spare started before the deploy, in its own copy of the files", async () => {
    const client = hostClient(host.url);
    const before = await eventually(client.customSpares, (pids) => pids.length === 2);
    await client.deploy("p", "web", 1, { "server.js": SERVER }, CONFIG);
    const answer = await json(await send("/write"));
    expect(before).toContain(answer.pid); // unsandboxed, the spare's shell became the app
    const versionDir = join(appRoot(appsRoot(home), "p", "web"), versionDirName(1));
    expect(answer.cwd).not.toBe(versionDir);
    expect(existsSync(join(answer.cwd as string, "out.txt"))).toBe(true);
    expect(existsSync(join(versionDir, "out.txt"))).toBe(false); // the deployed files stay as deployed
    const after = await eventually(client.customSpares, (pids) => pids.length === 2);
    expect(after).not.toContain(answer.pid);
  });

  it("answers 502 naming an entrypoint that does not exist", async () => {
    const config = configOf("web", {
      runtime: "custom",
      custom: { entrypoint: ["no-such-server"] },
    });
    await hostClient(host.url).deploy("p", "web", 1, { "server.js": SERVER }, config);
    const res = await send("/");
    expect(res.status).toBe(502);
    // In the app's words, not the shell's ('sh: 14: exec: no-such-server: not found' counted
    // the lines of the host's launch script).
    const { message } = await json(res);
    expect(message).toMatch(/exited before it was healthy \(code 127\)/);
    expect(message).toContain(
      "[custom] entrypoint: 'no-such-server' is not a program on the replica's PATH (the host's)",
    );
    expect(message).not.toMatch(/sh: \d+:/);
  });

  it("runs python3 for an entrypoint of 'python' where there is no python; says what else cannot run", () => {
    const bin = mkdtempSync(join(tmpdir(), "runlet-path-"));
    try {
      const say = (name: string) => `#!/bin/sh\necho ${name} "$@"\n`;
      writeFileSync(join(bin, "python3"), say("python3"), { mode: 0o755 });
      writeFileSync(join(bin, "script"), say("script"), { mode: 0o644 }); // no x bit
      const run = (entrypoint: string[], PATH = bin) =>
        spawnSync("/bin/sh", ["-s"], {
          input: launchScript({ PATH }, entrypoint),
          cwd: bin,
          env: {},
          encoding: "utf8",
        });
      expect(run(["python", "server.py"]).stdout).toBe("python3 server.py\n");
      const none = run(["python", "server.py"], "/nonexistent");
      expect([none.status, none.stderr]).toEqual([
        127,
        "[custom] entrypoint: 'python' is not a program on the replica's PATH (the host's)\n",
      ]);
      const script = run(["./script"]);
      expect(script.status).toBe(126);
      expect(script.stderr).toMatch(
        /^\[custom\] entrypoint: '.\/script' is not an executable file/,
      );
      expect(run(["./gone"]).stderr).toBe(
        "[custom] entrypoint: './gone' is not in the app's folder\n",
      );
    } finally {
      rmSync(bin, { recursive: true, force: true });
    }
  });

  it("hands the environment to the entrypoint exactly, whatever its values hold", () => {
    const env = { QUOTES: `it's "quoted"`, SHELLY: "$HOME `id` $(id) \\ *", LINES: "one\ntwo\n" };
    const printEnv = "process.stdout.write(JSON.stringify(process.env))";
    const out = spawnSync("/bin/sh", ["-s"], {
      input: launchScript(env, [process.execPath, "-e", printEnv]),
      env: {},
      encoding: "utf8",
    });
    expect(out.stderr).toBe("");
    expect(JSON.parse(out.stdout)).toMatchObject(env);
  });

  it("refuses the managed call route for a custom app and the forward route for a managed one", async () => {
    const client = hostClient(host.url);
    await client.deploy("p", "web", 1, { "server.js": SERVER }, CONFIG);
    expect((await client.invoke("p", "web", "run")).status).toBe(400);
    await client.deploy("p", "fn", 1, { "main.mjs": "export const run = () => 1;" });
    const res = await fetch(`${host.url}/internal/http/p/fn/`, {
      headers: { authorization: `Bearer ${TOKEN}`, [HEADER.runId]: "run_c" },
    });
    expect(res.status).toBe(400);
  });
});
