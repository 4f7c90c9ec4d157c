import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { APP_ENV } from "../../common/consts.ts";
import { failureOf, isGone, newHome, removeHome, waitUntil } from "../test-support.ts";
import { ManagedReplica } from "./replica.ts";

const OPTIONS = { startTimeoutMs: 10_000, stopGraceMs: 500 };
const CALL = { payload: null, runId: "run_1" };

describe("ManagedReplica", () => {
  let dir: string;
  const replicas: ManagedReplica[] = [];

  beforeEach(async () => {
    dir = await newHome();
  });

  afterEach(async () => {
    await Promise.all(replicas.splice(0).map((r) => r.stop()));
    await removeHome(dir);
  });

  /** `startTimeout`: the app's `start_timeout` (seconds); the options' limit without it. */
  async function replicaOf(
    files: Record<string, string>,
    options = OPTIONS,
    startTimeout?: number,
  ) {
    const appDir = join(dir, `app-${replicas.length}`);
    await mkdir(appDir);
    for (const [path, text] of Object.entries(files)) await writeFile(join(appDir, path), text);
    const replica = new ManagedReplica(
      { project: "p", app: "a", version: 1, dir: appDir, startTimeout },
      options,
    );
    replicas.push(replica);
    return replica;
  }

  it("finds CommonJS exports, module.exports objects and ESM default objects", async () => {
    const cjs = await replicaOf({ "main.js": "exports.run = (x) => ({ cjs: x });" });
    const objectExport = await replicaOf({
      "main.js": "const run = () => 'object'; module.exports = { run };",
    });
    const esmDefault = await replicaOf({ "main.mjs": "export default { run: () => 'default' };" });
    const esmInJs = await replicaOf({
      "package.json": '{"type":"module"}',
      "main.js": "export const run = () => 'esm';",
    });
    for (const r of [cjs, objectExport, esmDefault, esmInJs]) await r.start();
    expect(await cjs.invoke({ ...CALL, fn: "run", payload: 7 }, 5_000)).toEqual({
      kind: "returned",
      value: { cjs: 7 },
    });
    expect(await objectExport.invoke({ ...CALL, fn: "run" }, 5_000)).toMatchObject({
      value: "object",
    });
    expect(await esmDefault.invoke({ ...CALL, fn: "run" }, 5_000)).toMatchObject({
      value: "default",
    });
    expect(await esmInJs.invoke({ ...CALL, fn: "run" }, 5_000)).toMatchObject({ value: "esm" });
    // Not an inherited one; the not-found names the functions it does export.
    expect(await cjs.invoke({ ...CALL, fn: "toString" }, 5_000)).toEqual({
      kind: "not-found",
      exports: ["run"],
    });
  });

  it("runs concurrent calls independently, matched by id", async () => {
    const replica = await replicaOf({
      "main.mjs": `
export const wait = async (ms, ctx) => {
  await new Promise((r) => setTimeout(r, ms));
  return { ms, runId: ctx.runId };
};`,
    });
    await replica.start();
    const order: number[] = [];
    const calls = [300, 10, 150].map((ms) =>
      replica.invoke({ fn: "wait", payload: ms, runId: `run_${ms}` }, 5_000).then((outcome) => {
        order.push(ms);
        return outcome;
      }),
    );
    const outcomes = await Promise.all(calls);
    expect(order).toEqual([10, 150, 300]);
    expect(outcomes[0]).toEqual({ kind: "returned", value: { ms: 300, runId: "run_300" } });
  });

  it("turns a result JSON cannot carry into a clear error", async () => {
    const replica = await replicaOf({
      "main.mjs": `
export const big = () => 1n;
export const circular = () => { const o = {}; o.self = o; return o; };
export const dropped = () => ({ fn: () => 1, n: 1 });`,
    });
    await replica.start();
    expect(await replica.invoke({ ...CALL, fn: "big" }, 5_000)).toEqual({
      kind: "threw",
      message:
        "the function's result cannot be serialized as JSON: Do not know how to serialize a BigInt",
    });
    expect(await replica.invoke({ ...CALL, fn: "circular" }, 5_000)).toMatchObject({
      kind: "threw",
      message: expect.stringMatching(/^the function's result cannot be serialized as JSON: /),
    });
    expect(await replica.invoke({ ...CALL, fn: "dropped" }, 5_000)).toEqual({
      kind: "returned",
      value: { n: 1 },
    });
  });

  it("fails a result meant to stream (generator, stream, Response) rather than answer {}", async () => {
    const replica = await replicaOf({
      "main.mjs": `
export async function* tokens() { yield "a"; }
export function* pieces() { yield 1; }
export const stream = () => new ReadableStream({ start(c) { c.enqueue("x"); c.close(); } });
export const response = () => new Response("hi");
export const list = () => new Set([1]);`,
    });
    await replica.start();
    const failed = (kind: string) => ({
      kind: "threw",
      message: expect.stringMatching(
        new RegExp(
          `^the function's result cannot be serialized as JSON: it is ${kind}.*, which a managed function cannot stream`,
        ),
      ),
    });
    expect(await replica.invoke({ ...CALL, fn: "tokens" }, 5_000)).toEqual(
      failed("an async iterable"),
    );
    expect(await replica.invoke({ ...CALL, fn: "pieces" }, 5_000)).toEqual(failed("an iterator"));
    expect(await replica.invoke({ ...CALL, fn: "stream" }, 5_000)).toEqual(
      failed("an async iterable"),
    );
    expect(await replica.invoke({ ...CALL, fn: "response" }, 5_000)).toEqual(failed("a Response"));
    // A Set is JSON's {} as JSON.stringify makes it, not a stream.
    expect(await replica.invoke({ ...CALL, fn: "list" }, 5_000)).toEqual({
      kind: "returned",
      value: {},
    });
  });

  it("fails a result whose JSON is nothing (a function, a symbol) at once, and keeps the replica", async () => {
    const replica = await replicaOf({
      "main.mjs": `
export const fn = () => () => 1;
export const sym = () => Symbol("s");
export const noJson = () => ({ toJSON: () => undefined });
export const fnJson = () => ({ toJSON: () => () => 1 });
export const date = () => new Date(0);
export const ok = () => "still here";`,
    });
    await replica.start();
    const pid = replica.pid;
    const threw = (why: string) => ({
      kind: "threw",
      message: `the function's result cannot be serialized as JSON: ${why}`,
    });
    const started = Date.now();
    expect(await replica.invoke({ ...CALL, fn: "fn" }, 10_000)).toEqual(threw("it is a function"));
    expect(await replica.invoke({ ...CALL, fn: "sym" }, 10_000)).toEqual(threw("it is a symbol"));
    expect(await replica.invoke({ ...CALL, fn: "noJson" }, 10_000)).toEqual(
      threw("its toJSON() returned undefined"),
    );
    expect(await replica.invoke({ ...CALL, fn: "fnJson" }, 10_000)).toEqual(
      threw("its toJSON() returned a function"),
    );
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(await replica.invoke({ ...CALL, fn: "date" }, 5_000)).toEqual({
      kind: "returned",
      value: new Date(0).toJSON(),
    });
    expect(await replica.invoke({ ...CALL, fn: "ok" }, 5_000)).toEqual({
      kind: "returned",
      value: "still here",
    });
    expect(replica.pid).toBe(pid);
    expect(replica.accepting).toBe(true);
  });

  it("fails a call at once whose result message the host cannot read", async () => {
    // The app's code can send messages too; the ids of a new replica's calls count from 1.
    const replica = await replicaOf({
      "main.mjs": `
export const forge = () => {
  process.send({ type: "result", id: "1", ok: true });
  return new Promise(() => {});
};`,
    });
    await replica.start();
    const started = Date.now();
    expect(await replica.invoke({ ...CALL, fn: "forge" }, 10_000)).toEqual({
      kind: "threw",
      message: "the function's result cannot be read: the replica's result message has no value",
    });
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("reports a module that throws or exits while loading", async () => {
    const throws = await replicaOf({ "main.mjs": "throw new Error('boom at ' + process.cwd());" });
    const failure = await failureOf(throws.start());
    expect(failure.failure).toEqual({ kind: "load-failed", detail: "boom at . (./main.mjs:1)" });
    expect(failure.message).toBe("the app failed to start: boom at . (./main.mjs:1)");

    const exits = await replicaOf({ "main.js": "process.exit(4);" });
    expect((await failureOf(exits.start())).message).toBe(
      "the app failed to start: its process exited during start-up (code 4)",
    );
  });

  it("gives up on a module that never finishes loading", async () => {
    const replica = await replicaOf(
      { "main.mjs": "await new Promise(() => setInterval(() => {}, 1000));" },
      { ...OPTIONS, startTimeoutMs: 300 },
    );
    const failure = await failureOf(replica.start());
    expect(failure.message).toBe(
      'the app failed to start: it did not load within 0.3 s, the app\'s start_timeout (runlet.toml): a module that loads a model or data as it is imported must load within it: raise start_timeout (at most 1800 s), or load it on the first call instead, kept in a module-level promise (docs/api.md, "Slow starts")',
    );
    await waitUntil(() => replica.exited);
  });

  it("says a spare that does not start in the host's limit is the host's failure, not the app's start_timeout", async () => {
    const spare = new ManagedReplica(
      { project: "", app: "", version: 0, dir, env: { [APP_ENV.spare]: "1" } },
      { ...OPTIONS, startTimeoutMs: 1 }, // node itself cannot start in 1 ms
    );
    replicas.push(spare);
    const failure = await failureOf(spare.startSpare());
    expect(failure.failure).toMatchObject({ kind: "load-failed", host: true });
    expect(failure.message).toContain(
      "a spare process (node and the runtime's shim, no app's code yet) did not start within 0.001 s, the host's start limit",
    );
    expect(failure.message).not.toContain("start_timeout");
    await waitUntil(() => spare.exited);
  });

  it("gives a module its app's start_timeout to load, not the host's limit", async () => {
    // Loads for about 2 s as it is imported, as a module that loads a model does.
    const slow = {
      "main.mjs":
        "await new Promise((r) => setTimeout(r, 2_000));\nexport const run = () => 'loaded';",
    };
    const short = await replicaOf(slow, OPTIONS, 1);
    const failure = await failureOf(short.start());
    expect(failure.message).toMatch(
      /^the app failed to start: it did not load within 1 s, the app's start_timeout \(runlet\.toml\): .*raise start_timeout/,
    );
    const long = await replicaOf(slow, { ...OPTIONS, startTimeoutMs: 300 }, 5);
    await long.start();
    expect(await long.invoke({ ...CALL, fn: "run" }, 5_000)).toMatchObject({ value: "loaded" });
  });

  it("fails calls at once when the app closes its channel to the host", async () => {
    const replica = await replicaOf({
      "main.mjs": "export const leave = () => { process.disconnect(); };",
    });
    await replica.start();
    const started = Date.now();
    const failure = await failureOf(replica.invoke({ ...CALL, fn: "leave" }, 60_000));
    expect(failure.failure.kind).toBe("exited");
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("says how a crashed process ended: its own exit status, or that it ran out of memory", async () => {
    const app = {
      "main.mjs": `
export const exit = () => process.exit(3);
export const grow = () => { const a = []; for (;;) a.push(new Array(1e6).fill(1.5)); };`,
    };
    // Three at once: the host's own kill as the channel closed had won this race about half the
    // time, and the call read "signal SIGKILL".
    const exits = [await replicaOf(app), await replicaOf(app), await replicaOf(app)];
    await Promise.all(exits.map((r) => r.start()));
    for (const failure of await Promise.all(
      exits.map((r) => failureOf(r.invoke({ ...CALL, fn: "exit" }, 60_000))),
    ))
      expect(failure.message).toBe(
        "the function's process exited unexpectedly (code 3); its output (runlet logs --app a) may say why",
      );

    const grows = await replicaOf(app);
    await grows.start();
    const failure = await failureOf(grows.invoke({ ...CALL, fn: "grow" }, 60_000));
    expect(failure.failure).toMatchObject({ kind: "exited", outOfMemory: true });
    expect(failure.message).toMatch(
      /^the function ran out of memory: its process reached the JavaScript heap's limit and ended \(signal SIGABRT\)/,
    );
  });

  it("keeps stdout and stderr, and stop() ends what the app spawned too", async () => {
    const replica = await replicaOf({
      "main.mjs": `
import { spawn } from "node:child_process";
export const spawnSleep = (_, ctx) => {
  ctx.log("spawning");
  console.error("on stderr");
  const child = spawn("sleep", ["30"], { stdio: "ignore" });
  return child.pid;
};`,
    });
    await replica.start();
    const outcome = await replica.invoke({ ...CALL, fn: "spawnSleep" }, 5_000);
    const sleepPid = outcome.kind === "returned" ? Number(outcome.value) : 0;
    expect(isGone(sleepPid)).toBe(false);
    await waitUntil(() => replica.logs.text().includes("on stderr"));
    expect(replica.logs.text()).toContain("spawning\n");
    const pid = replica.pid ?? 0;
    await replica.stop();
    expect(isGone(pid)).toBe(true);
    await waitUntil(() => isGone(sleepPid));
  });

  it("rejects calls after stop() and the calls in flight when stopped", async () => {
    const replica = await replicaOf({
      "main.mjs": "export const hang = () => new Promise(() => setInterval(() => {}, 1000));",
    });
    await replica.start();
    const inFlight = failureOf(replica.invoke({ ...CALL, fn: "hang" }, 60_000));
    await replica.stop();
    // The call in flight is told it ran (it said "the runtime host is shutting down", as if
    // nothing had: the operator's round); a call after the stop did not run.
    const stopped = await inFlight;
    expect(stopped.failure).toEqual({ kind: "closing", running: true });
    expect(stopped.message).toBe(
      "the runtime host stopped while the call ran there, and its process with it: the call may not have finished",
    );
    expect((await failureOf(replica.invoke({ ...CALL, fn: "hang" }, 1_000))).failure).toEqual({
      kind: "closing",
    });
  });
});
