// The managed runtime's process: imports the app's module from its cwd and runs the calls the
// host sends over IPC. Plain JavaScript for plain `node` (it must start fast); the message types
// are those of `runtime-host/pool/messages.ts`.
import { AsyncLocalStorage } from "node:async_hooks";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { format } from "node:util";
import { appErrors } from "./errors.mjs";
import { LogBatch } from "./log-batch.mjs";
import { jsonValue } from "./result-json.mjs";
import { StreamText } from "./stream-text.mjs";

/**
 * @typedef {import("../../pool/messages.ts").HostMessage} HostMessage
 * @typedef {import("../../pool/messages.ts").ChildMessage} ChildMessage
 * @typedef {import("../../pool/messages.ts").InvokeMessage} InvokeMessage
 * @typedef {(payload: unknown, ctx: CallContext) => unknown} AppFunction
 * @typedef {{ runId: string, async: boolean, signal: AbortSignal, log: (...args: unknown[]) => void }} CallContext
 * @typedef {"stdout" | "stderr"} StreamName
 * @typedef {{ runId: string, open: boolean, text: Partial<Record<StreamName, StreamText>> }} RunScope
 *   a call's output goes to its run while `open`, made text per stream by `text`
 */

const ENTRY_FILES = ["main.mjs", "main.js"];

// Taken before the app's code runs, so the app cannot swap them out.
const channel = process.send?.bind(process);
const appDir = process.cwd();

if (!channel) {
  console.error("shim.mjs runs as a replica of the runtime host, with an IPC channel");
  process.exit(2);
}

/**
 * Sends a message; resolves once it is written. Throws if it cannot be serialized.
 * @param {ChildMessage} msg
 * @returns {Promise<void>}
 */
function send(msg) {
  return new Promise((resolve, reject) => {
    try {
      channel?.(msg, () => resolve());
    } catch (err) {
      reject(err);
    }
  });
}

// ── Output of runs ──────────────────────────────────────────────────────────────────────────
// Each call runs in an AsyncLocalStorage scope that follows it across awaits, timers and
// callbacks. While its call runs, what the code writes to process.stdout / process.stderr (and so
// every console method) goes to the host in `log` messages (batched: log-batch.mjs), as that
// run's; outside any call, or once the call has returned, it goes to the process's own stdout /
// stderr (the replica's log).

/** @type {AsyncLocalStorage<RunScope>} */
const runScope = new AsyncLocalStorage();

// A failed send means the channel is gone, and with it the host: nothing is left to tell.
const logs = new LogBatch((msg) => void send(msg).catch(() => {}));
// What the runs wrote last, as the process exits (by process.exit, or an uncaught exception).
process.on("exit", () => logs.flush());

/** The streams' own `write`, taken before the app's code runs. */
const realWrite = {
  stdout: process.stdout.write.bind(process.stdout),
  stderr: process.stderr.write.bind(process.stderr),
};

/**
 * Sends a `write` chunk of an open run as its output.
 * @param {RunScope} scope
 * @param {StreamName} stream
 * @param {unknown} chunk
 * @param {unknown} [encoding]
 */
function runWrite(scope, stream, chunk, encoding) {
  const streamText = scope.text[stream] ?? new StreamText();
  scope.text[stream] = streamText;
  const text = hidePaths(streamText.of(chunk, encoding));
  if (text !== "") logs.add({ runId: scope.runId, stream, text, at: Date.now() });
}

/**
 * Writes `text` as the run's output while it is open, else to the process's own stream.
 * @param {RunScope | undefined} scope
 * @param {StreamName} stream
 * @param {string} text
 */
function writeFor(scope, stream, text) {
  if (scope?.open) runWrite(scope, stream, text);
  else realWrite[stream](text);
}

/**
 * Ends the run's output: what its streams hold of characters cut short is sent now; what its
 * code writes from now on is the process's own.
 * @param {RunScope} scope
 */
function closeRun(scope) {
  for (const [stream, text] of Object.entries(scope.text)) {
    const rest = text?.end();
    if (rest) runWrite(scope, /** @type {StreamName} */ (stream), rest);
  }
  scope.open = false;
}

for (const stream of /** @type {const} */ (["stdout", "stderr"])) {
  const target = process[stream];
  const original = target.write;
  /** @type {(chunk: unknown, encoding?: unknown, callback?: unknown) => boolean} */
  const write = (chunk, encoding, callback) => {
    const scope = runScope.getStore();
    if (!scope?.open) return Reflect.apply(original, target, [chunk, encoding, callback]);
    runWrite(scope, stream, chunk, encoding);
    const done = typeof encoding === "function" ? encoding : callback;
    if (typeof done === "function") process.nextTick(() => done(null));
    return true;
  };
  target.write = /** @type {typeof target.write} */ (write);
}

const { describe, appStack, whereIn, hidePaths } = appErrors(appDir);

/** @returns {Promise<Record<string, unknown>>} */
async function loadApp() {
  const entry = ENTRY_FILES.find((file) => existsSync(join(appDir, file)));
  if (!entry) throw new Error("the app has neither main.mjs nor main.js");
  return import(pathToFileURL(join(appDir, entry)).href);
}

/**
 * An export by name: ESM exports, CommonJS `exports.x` (found by Node's export detection or
 * through `module.exports` as the default export).
 * @param {Record<string, unknown>} mod
 * @param {string} name
 * @returns {AppFunction | undefined}
 */
function findFunction(mod, name) {
  if (Object.hasOwn(mod, name) && typeof mod[name] === "function") {
    return /** @type {AppFunction} */ (mod[name]);
  }
  const fallback = mod.default;
  if (fallback && (typeof fallback === "object" || typeof fallback === "function")) {
    const value = /** @type {Record<string, unknown>} */ (fallback)[name];
    if (Object.hasOwn(fallback, name) && typeof value === "function") {
      return /** @type {AppFunction} */ (value);
    }
  }
  return undefined;
}

/**
 * The names `findFunction` finds, for a call of a name it does not: the caller is told them.
 * @param {Record<string, unknown>} mod
 * @returns {string[]}
 */
function functionNames(mod) {
  const fallback = mod.default;
  const objects =
    fallback && (typeof fallback === "object" || typeof fallback === "function")
      ? [mod, /** @type {Record<string, unknown>} */ (fallback)]
      : [mod];
  const names = new Set();
  for (const object of objects) {
    for (const name of Object.keys(object)) {
      if (typeof object[name] === "function") names.add(name);
    }
  }
  return [...names];
}

/** @type {Map<string, AbortController>} */
const inFlight = new Map();
let stopping = false;

/**
 * @param {string} id
 * @param {unknown} value
 */
async function sendValue(id, value) {
  try {
    await send({ type: "result", id, ok: true, value: jsonValue(value) });
  } catch (err) {
    const why = describe(err).split("\n", 1)[0];
    await send({
      type: "result",
      id,
      ok: false,
      error: { message: `the function's result cannot be serialized as JSON: ${why}` },
    });
  }
}

/**
 * @param {Record<string, unknown>} mod
 * @param {InvokeMessage} msg
 */
async function invoke(mod, msg) {
  const fn = findFunction(mod, msg.fn);
  if (!fn) {
    await send({
      type: "result",
      id: msg.id,
      ok: false,
      notFound: true,
      exports: functionNames(mod),
    });
    return;
  }
  const controller = new AbortController();
  inFlight.set(msg.id, controller);
  /** @type {CallContext} */
  const ctx = {
    runId: msg.runId,
    async: msg.async,
    signal: controller.signal,
    log: (...args) => writeFor(scope, "stdout", `${format(...args)}\n`),
  };
  /** @type {RunScope} */
  const scope = { runId: msg.runId, open: true, text: {} };
  /** @type {{ ok: true, value: unknown } | { ok: false, error: unknown }} */
  let outcome;
  try {
    outcome = { ok: true, value: await runScope.run(scope, () => fn(msg.payload, ctx)) };
  } catch (err) {
    outcome = { ok: false, error: err };
    // The caller gets the message alone; the run's log (`runlet logs`) gets the stack.
    if (err instanceof Error && err.stack) writeFor(scope, "stderr", `${appStack(err.stack)}\n`);
  }
  // What the function's timers and leftover promises write from now on is the replica's own.
  closeRun(scope);
  // The run's log is all in before its result (IPC keeps the order).
  logs.flush();
  try {
    if (outcome.ok) await sendValue(msg.id, outcome.value);
    else
      await send({
        type: "result",
        id: msg.id,
        ok: false,
        error: { message: describe(outcome.error) },
      });
  } finally {
    inFlight.delete(msg.id);
    if (stopping && inFlight.size === 0) process.exit(0);
  }
}

/**
 * A spare process (RUNLET_SPARE=1) starts before any app is known, so that a cold start does
 * not pay for starting node: it waits until the host has put an app's files in its folder and
 * sends `load` with the app's environment.
 */
function waitForApp() {
  return new Promise((resolve) => {
    const onMessage = (/** @type {unknown} */ raw) => {
      const msg = /** @type {HostMessage | null} */ (raw);
      if (msg?.type !== "load") return;
      process.off("message", onMessage);
      delete process.env.RUNLET_SPARE;
      Object.assign(process.env, msg.env);
      resolve(undefined);
    };
    process.on("message", onMessage);
    void send({ type: "spare" });
  });
}

async function main() {
  if (process.env.RUNLET_SPARE === "1") await waitForApp();
  /** @type {Record<string, unknown>} */
  let mod;
  try {
    mod = await loadApp();
  } catch (err) {
    const name = err instanceof Error && err.name !== "Error" ? `${err.name}: ` : "";
    const where = whereIn(err);
    const message = `${name}${describe(err).split("\n", 1)[0]}${where ? ` (${where})` : ""}`;
    await send({ type: "load-error", message }).catch(() => {});
    process.exit(1);
  }
  process.on("message", (/** @type {unknown} */ raw) => {
    const msg = /** @type {HostMessage | null} */ (raw);
    if (msg?.type === "invoke") void invoke(mod, msg);
    else if (msg?.type === "cancel")
      inFlight.get(msg.id)?.abort(new Error("the run was cancelled"));
  });
  await send({ type: "ready", exports: functionNames(mod) });
}

// Stopping: calls in flight see their signal abort; the process ends once they are done (the
// host sends SIGKILL if that takes too long).
process.on("SIGTERM", () => {
  stopping = true;
  for (const controller of inFlight.values())
    controller.abort(new Error("the replica is stopping"));
  if (inFlight.size === 0) process.exit(0);
});
// The host is gone: nobody is left to answer.
process.on("disconnect", () => process.exit(0));

void main();
