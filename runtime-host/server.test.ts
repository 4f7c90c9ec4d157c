import { existsSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { appRoot, appsRoot } from "../common/app-paths.ts";
import type { RunningHost } from "./server.ts";
import {
  configOf,
  hostClient,
  isGone,
  newHome,
  removeHome,
  startTestHost,
  TOKEN,
  waitUntil,
} from "./test-support.ts";

/** How a body refused as a function's input goes on: what to send instead. */
const INSTEAD =
  "a managed function's input is a JSON body: send a file in it as a base64 string, or deploy a custom app, which gets the body's bytes as they are";

const HELLO = {
  "main.mjs": `
export function run(input, ctx) {
  return { greeting: "Hello, " + (input?.name ?? "world") + "!", runId: ctx.runId };
}
export function fail(input) {
  throw new Error(input?.message ?? "no luck");
}
export function throwString() {
  throw "plain string";
}
export function throwObject(input) {
  throw input;
}
export function throwCircular() {
  const value = {};
  value.self = value;
  throw value;
}
export function nothing() {}
export function pid() {
  return process.pid;
}
export function crash() {
  process.exit(3);
}
export function env() {
  return { token: process.env.RUNLET_INTERNAL_TOKEN ?? null, app: process.env.RUNLET_APP };
}
export const notAFunction = 42;
`,
};

describe("runtime host", () => {
  let home: string;
  let host: RunningHost;
  let client: ReturnType<typeof hostClient>;

  beforeEach(async () => {
    home = await newHome();
    host = await startTestHost(home);
    client = hostClient(host.url);
  });

  afterEach(async () => {
    await host.close();
    await removeHome(home);
  });

  it("answers /healthz without a token, on loopback", async () => {
    expect(host.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const res = await fetch(`${host.url}/healthz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true });
  });

  it("deploys an app and runs its export", async () => {
    const deployed = await client.deploy("prj_1", "hello", 1, HELLO);
    expect(deployed).toEqual({
      status: 200,
      body: { project: "prj_1", app: "hello", version: 1 },
    });
    const ran = await client.invoke("prj_1", "hello", "run", '{"name":"Ada"}');
    expect(ran.status).toBe(200);
    expect(ran.body).toMatchObject({
      ok: true,
      result: { greeting: "Hello, Ada!", runId: "run_test" },
    });
    expect(typeof ran.body.run_time_ms).toBe("number");
  });

  it("starts one replica for concurrent first calls it can take, and keeps it warm", async () => {
    await client.deploy(
      "p",
      "hello",
      1,
      HELLO,
      configOf("hello", { scaling: { replica_concurrency: 4 } }),
    );
    const answers = await Promise.all([1, 2, 3, 4].map(() => client.invoke("p", "hello", "pid")));
    const pids = new Set(answers.map((a) => a.body.result));
    expect(pids.size).toBe(1);
    expect((await client.invoke("p", "hello", "pid")).body.result).toBe([...pids][0]);
  });

  it("treats an empty body as null and undefined results as null", async () => {
    await client.deploy("p", "hello", 1, HELLO);
    expect((await client.invoke("p", "hello", "run")).body).toMatchObject({
      ok: true,
      result: { greeting: "Hello, world!" },
    });
    expect((await client.invoke("p", "hello", "nothing", "")).body).toMatchObject({
      ok: true,
      result: null,
    });
  });

  it("turns a throw into {ok: false, error} without a stack", async () => {
    await client.deploy("p", "hello", 1, HELLO);
    const failed = await client.invoke("p", "hello", "fail", '{"message":"no luck"}');
    expect(failed.status).toBe(200);
    expect(failed.body).toEqual({
      ok: false,
      error: { message: "no luck" },
      run_time_ms: expect.any(Number),
    });
    expect(JSON.stringify(failed.body)).not.toMatch(/\bat |\.mjs|runlet-host-/);
    const thrownString = await client.invoke("p", "hello", "throwString");
    expect(thrownString.body).toMatchObject({ ok: false, error: { message: "plain string" } });
    // A thrown object reads as its own message, or as its JSON (cut), not "[object Object]".
    const thrown = async (value: unknown) => {
      const { body } = await client.invoke("p", "hello", "throwObject", JSON.stringify(value));
      return (body as { error: { message: string } }).error.message;
    };
    expect(await thrown({ code: 42, reason: "quota" })).toBe('{"code":42,"reason":"quota"}');
    expect(await thrown({ message: "not an Error", code: 7 })).toBe("not an Error");
    expect(await thrown({ long: "x".repeat(5000) })).toBe(`{"long":"${"x".repeat(991)}…`);
    const circular = await client.invoke("p", "hello", "throwCircular");
    expect(circular.body).toMatchObject({ error: { message: "a value that cannot be shown" } });
  });

  it("answers 404 for an unknown app, an unknown export and a non-function export", async () => {
    await client.deploy("p", "hello", 1, HELLO);
    expect(await client.invoke("p", "ghost", "run")).toEqual({
      status: 404,
      body: { message: "app 'ghost' is not deployed in project 'p'", code: "not_found" },
    });
    // The functions it does export are named: the caller had to guess them (user testing).
    const exported = "crash, env, fail, nothing, pid, run, throwCircular, throwObject, throwString";
    expect(await client.invoke("p", "hello", "nope")).toEqual({
      status: 404,
      body: {
        message: `app 'hello' has no function 'nope' (it exports: ${exported})`,
        code: "not_found",
      },
    });
    expect(await client.invoke("p", "hello", "notAFunction")).toMatchObject({
      status: 404,
      body: { message: `app 'hello' has no function 'notAFunction' (it exports: ${exported})` },
    });
    // A CommonJS module's, and a module's that exports none.
    const cjs = "module.exports = { handler() {}, resize: () => 1, size: 3 };";
    await client.deploy("p", "nodefn", 1, { "main.js": cjs });
    expect((await client.invoke("p", "nodefn", "run")).body.message).toBe(
      "app 'nodefn' has no function 'run' (it exports: handler, resize)",
    );
    await client.deploy("p", "none", 1, { "main.mjs": "export const size = 3;" });
    expect((await client.invoke("p", "none", "run")).body.message).toBe(
      "app 'none' has no function 'run' (it exports no function)",
    );
    const unknownRoute = await fetch(`${host.url}/nowhere`);
    expect(unknownRoute.status).toBe(404);
    expect(await unknownRoute.json()).toEqual({ message: expect.any(String), code: "not_found" });
  });

  it("answers 401 without or with a wrong internal token", async () => {
    await client.deploy("p", "hello", 1, HELLO);
    const missing = await fetch(`${host.url}/internal/invoke/p/hello/run`, {
      method: "POST",
      headers: { "x-runlet-run-id": "run_1" },
    });
    expect(missing.status).toBe(401);
    expect(await missing.json()).toEqual({ message: expect.any(String), code: "unauthorized" });
    const wrong = hostClient(host.url, `${TOKEN}x`);
    expect((await wrong.invoke("p", "hello", "run")).status).toBe(401);
    expect((await wrong.deploy("p", "hello", 2, HELLO)).status).toBe(401);
    expect((await client.invoke("p", "hello", "run")).body).toMatchObject({ ok: true });
  });

  it("answers 400 for invalid or too deep JSON, a missing run id and bad names", async () => {
    await client.deploy("p", "hello", 1, HELLO);
    expect(await client.invoke("p", "hello", "run", "{nope")).toEqual({
      status: 400,
      body: { message: `request body is not valid JSON: ${INSTEAD}`, code: "bad_request" },
    });
    // "café" in Latin-1: not UTF-8, which JSON is (it had run with "caf\ufffd").
    expect(await client.invoke("p", "hello", "run", Buffer.from('"caf\xe9"', "latin1"))).toEqual({
      status: 400,
      body: { message: `request body is not valid UTF-8: ${INSTEAD}`, code: "bad_request" },
    });
    // Too deep to hand to a replica (its serializer recursed and the replica died with it).
    const pid = (await client.invoke("p", "hello", "pid")).body.result;
    const deep = (n: number) => `${"[".repeat(n)}${"]".repeat(n)}`;
    expect(await client.invoke("p", "hello", "run", deep(20_000))).toEqual({
      status: 400,
      body: {
        message: "request body nests arrays and objects deeper than 1000 levels",
        code: "bad_request",
      },
    });
    expect((await client.invoke("p", "hello", "run", deep(1_000))).status).toBe(200);
    expect((await client.invoke("p", "hello", "pid")).body.result).toBe(pid);
    const noRunId = await fetch(`${host.url}/internal/invoke/p/hello/run`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(noRunId.status).toBe(400);
    expect((await client.invoke("Bad", "hello", "run")).status).toBe(400);
    expect((await client.deploy("p", "Hello", 1, HELLO, configOf("hello"))).status).toBe(400);
    // The app of the path and the name of its config must agree.
    expect(await client.deploy("p", "hello", 1, HELLO, configOf("other"))).toEqual({
      status: 400,
      body: { message: "config.name: 'other' does not match the app 'hello'", code: "bad_request" },
    });
  });

  it("refuses a bad deploy body with 400 and an oversized one with 413", async () => {
    const put = (body: string) =>
      fetch(`${host.url}/internal/apps/p/hello`, {
        method: "PUT",
        headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
        body,
      });
    const noVersion = await put(JSON.stringify({ config: { name: "hello" }, files: [] }));
    expect(noVersion.status).toBe(400);
    expect(await noVersion.json()).toEqual({
      message: expect.stringMatching(/^version: /),
      code: "bad_request",
    });
    const outside = await put(
      JSON.stringify({
        version: 1,
        config: { name: "hello" },
        files: [{ path: "../x.js", contentBase64: "" }],
      }),
    );
    expect(outside.status).toBe(400);
    const huge = await put("x".repeat(29 * 1024 * 1024));
    expect(huge.status).toBe(413);
    expect(await huge.json()).toEqual({
      message: expect.stringMatching(/larger than/),
      code: "payload_too_large",
    });
  });

  it("answers 500 {message} when a deploy fails unexpectedly after its body was read", async () => {
    // A file where the app's folder must go: its write fails in a way no check foresaw.
    await mkdir(join(appsRoot(home), "p"), { recursive: true });
    await writeFile(appRoot(appsRoot(home), "p", "blocked"), "not a folder");
    const res = await client.deploy("p", "blocked", 1, HELLO);
    expect(res.status).toBe(500);
    expect(res.body).toEqual({ message: "internal error", code: "internal" });
  });

  it("answers 502 when the process dies mid-call, then serves from a fresh replica", async () => {
    await client.deploy("p", "hello", 1, HELLO);
    const first = Number((await client.invoke("p", "hello", "pid")).body.result);
    expect(await client.invoke("p", "hello", "crash")).toEqual({
      status: 502,
      body: {
        message:
          "the function's process exited unexpectedly (code 3); its output (runlet logs --app hello) may say why",
        code: "bad_gateway",
        run_time_ms: expect.any(Number), // it ran: the Worker reports how long to the runs index
      },
    });
    await waitUntil(() => isGone(first));
    const again = await client.invoke("p", "hello", "pid");
    expect(again.status).toBe(200);
    expect(again.body.result).not.toBe(first);
  });

  it("answers 502 with the first line of the error when the app cannot load", async () => {
    await client.deploy("p", "broken", 1, {
      "main.mjs": "export function run() {\n  return 1 +;\n}\n",
    });
    const syntax = await client.invoke("p", "broken", "run");
    expect(syntax.status).toBe(502);
    expect(syntax.body.message).toMatch(/^the app failed to start: SyntaxError: /);
    expect(syntax.body.message).not.toMatch(/\n|runlet-host-/);
    // Thrown as a module of its own loads: which file and line.
    await client.deploy("p", "broken", 2, {
      "main.mjs": 'export { run } from "./lib/h.mjs";\n',
      "lib/h.mjs": 'export const run = () => 1;\nthrow new Error("DATABASE_URL is not set");\n',
    });
    const deeper = await client.invoke("p", "broken", "run");
    expect(deeper.body.message).toBe(
      "the app failed to start: DATABASE_URL is not set (./lib/h.mjs:2)",
    );

    await client.deploy("p", "empty", 1, { "README.md": "no code" });
    expect(await client.invoke("p", "empty", "run")).toEqual({
      status: 502,
      body: {
        message: "the app failed to start: the app has neither main.mjs nor main.js",
        code: "bad_gateway",
      },
    });
  });

  it("switches to a redeployed version at once and stops the old replica", async () => {
    await client.deploy("p", "counter", 1, {
      "main.mjs": "export const run = () => 1; export const pid = () => process.pid;",
    });
    expect((await client.invoke("p", "counter", "run")).body.result).toBe(1);
    const oldPid = Number((await client.invoke("p", "counter", "pid")).body.result);

    expect(
      (await client.deploy("p", "counter", 2, { "main.js": "exports.run = () => 2;" })).body,
    ).toEqual({ project: "p", app: "counter", version: 2 });
    expect((await client.invoke("p", "counter", "run")).body.result).toBe(2);
    await waitUntil(() => isGone(oldPid));

    // The same version again is fine (a retried deploy).
    expect(
      (await client.deploy("p", "counter", 2, { "main.js": "exports.run = () => 2;" })).status,
    ).toBe(200);
    expect((await client.invoke("p", "counter", "run")).body.result).toBe(2);
  });

  it("lets the old version finish its calls in flight after a redeploy", async () => {
    await client.deploy("p", "slow", 1, {
      "main.mjs": `
export const slow = async () => { await new Promise((r) => setTimeout(r, 2000)); return "v1 done"; };
export const pid = () => process.pid;`,
    });
    const oldPid = Number((await client.invoke("p", "slow", "pid")).body.result);
    // Long enough that v2's cold start, on a loaded machine, ends while v1's call still runs.
    const inFlight = client.invoke("p", "slow", "slow");
    await new Promise((r) => setTimeout(r, 100));
    await client.deploy("p", "slow", 2, { "main.mjs": "export const slow = () => 'v2';" });
    expect((await client.invoke("p", "slow", "slow")).body.result).toBe("v2");
    expect(isGone(oldPid)).toBe(false);
    expect((await inFlight).body).toMatchObject({ ok: true, result: "v1 done" });
    await waitUntil(() => isGone(oldPid));
  });

  it("fails calls in flight when closed, without waiting for them", async () => {
    await client.deploy("p", "stuck", 1, {
      "main.mjs": "export const hang = () => new Promise(() => setInterval(() => {}, 1000));",
    });
    const inFlight = client.invoke("p", "stuck", "hang").catch(() => ({ status: 0, body: {} }));
    await new Promise((r) => setTimeout(r, 300));
    const started = Date.now();
    await host.close();
    expect(Date.now() - started).toBeLessThan(5_000);
    const answer = await inFlight;
    expect([0, 503]).toContain(answer.status);
  });

  it("deletes an app: its replicas stop, its files go, and it stays gone after a restart", async () => {
    await client.deploy("p", "hello", 1, HELLO);
    const pid = (await client.invoke("p", "hello", "pid")).body.result as number;
    const remove = () =>
      fetch(`${host.url}/internal/apps/p/hello`, {
        method: "DELETE",
        headers: { authorization: `Bearer ${TOKEN}` },
      });
    expect((await remove()).status).toBe(204);
    await waitUntil(() => isGone(pid));
    expect((await client.invoke("p", "hello", "pid")).status).toBe(404);
    expect(existsSync(join(home, "host", "apps", "p", "hello"))).toBe(false);
    expect((await remove()).status).toBe(204); // deleting again is harmless

    await host.close();
    host = await startTestHost(home);
    expect((await hostClient(host.url).invoke("p", "hello", "pid")).status).toBe(404);
  });

  it("keeps serving deployed apps after a restart on the same home", async () => {
    await client.deploy("p", "hello", 1, HELLO);
    expect((await client.invoke("p", "hello", "run")).status).toBe(200);
    await host.close();
    host = await startTestHost(home);
    client = hostClient(host.url);
    expect((await client.invoke("p", "hello", "run", '{"name":"again"}')).body).toMatchObject({
      ok: true,
      result: { greeting: "Hello, again!" },
    });
  });

  it("leaves no replica process behind on close()", async () => {
    await client.deploy("p", "hello", 1, HELLO);
    await client.deploy("p", "other", 1, { "main.js": "exports.pid = () => process.pid;" });
    const pids = [
      Number((await client.invoke("p", "hello", "pid")).body.result),
      Number((await client.invoke("p", "other", "pid")).body.result),
    ];
    for (const pid of pids) expect(isGone(pid)).toBe(false);
    await host.close();
    for (const pid of pids) expect(isGone(pid)).toBe(true);
  });

  it("does not hand the host's environment to the app", async () => {
    process.env.RUNLET_INTERNAL_TOKEN = TOKEN;
    try {
      await client.deploy("p", "hello", 1, HELLO);
      expect((await client.invoke("p", "hello", "env")).body.result).toEqual({
        token: null,
        app: "hello",
      });
    } finally {
      delete process.env.RUNLET_INTERNAL_TOKEN;
    }
  });
});

describe("runtime host time limits", () => {
  it("answers 504 past the call time limit and kills the replica", async () => {
    const home = await newHome();
    const host = await startTestHost(home, { limits: { callTimeoutMs: 300 } });
    try {
      const client = hostClient(host.url);
      await client.deploy("p", "slow", 1, {
        "main.mjs": `
export const pid = () => process.pid;
export const hang = () => new Promise(() => { setInterval(() => {}, 1000); });
`,
      });
      const pid = Number((await client.invoke("p", "slow", "pid")).body.result);
      const timedOut = await client.invoke("p", "slow", "hang");
      expect(timedOut.status).toBe(504);
      expect(timedOut.body.message).toMatch(/did not finish within 0.3 s/);
      await waitUntil(() => isGone(pid));
      expect((await client.invoke("p", "slow", "pid")).status).toBe(200);
    } finally {
      await host.close();
      await removeHome(home);
    }
  });
});
