// The managed runtime's process: imports the app's module from its cwd and runs the calls the
// host sends over IPC. Plain JavaScript for plain `node` (it must start fast); the message types
// are those of `runtime-host/pool/messages.ts`.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

/**
 * @typedef {import("../../pool/messages.ts").HostMessage} HostMessage
 * @typedef {import("../../pool/messages.ts").ChildMessage} ChildMessage
 * @typedef {import("../../pool/messages.ts").InvokeMessage} InvokeMessage
 * @typedef {(payload: unknown, ctx: CallContext) => unknown} AppFunction
 * @typedef {{ runId: string, async: boolean, signal: AbortSignal, log: (...args: unknown[]) => void }} CallContext
 */

const ENTRY_FILES = ["main.mjs", "main.js"];

// Taken before the app's code runs, so the app cannot swap them out.
const channel = process.send?.bind(process);
const log = console.log.bind(console);
const appDir = process.cwd();
const appUrl = pathToFileURL(appDir).href;

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

/** An error's text for the caller: its message (or the thrown value), without host paths. */
function describe(/** @type {unknown} */ thrown) {
  let text;
  try {
    text = thrown instanceof Error ? thrown.message : String(thrown);
  } catch {
    text = "a value that cannot be shown";
  }
  for (const prefix of [appUrl, appDir]) {
    text = text.replaceAll(`${prefix}/`, "./").replaceAll(prefix, ".");
  }
  return text;
}

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

/** @type {Map<string, AbortController>} */
const inFlight = new Map();
let stopping = false;

/**
 * @param {string} id
 * @param {unknown} value
 */
async function sendValue(id, value) {
  try {
    await send({ type: "result", id, ok: true, value: value === undefined ? null : value });
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
    await send({ type: "result", id: msg.id, ok: false, notFound: true });
    return;
  }
  const controller = new AbortController();
  inFlight.set(msg.id, controller);
  /** @type {CallContext} */
  const ctx = {
    runId: msg.runId,
    async: msg.async,
    signal: controller.signal,
    log: (...args) => log(...args),
  };
  /** @type {{ ok: true, value: unknown } | { ok: false, error: unknown }} */
  let outcome;
  try {
    outcome = { ok: true, value: await fn(msg.payload, ctx) };
  } catch (err) {
    outcome = { ok: false, error: err };
  }
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

async function main() {
  /** @type {Record<string, unknown>} */
  let mod;
  try {
    mod = await loadApp();
  } catch (err) {
    const name = err instanceof Error && err.name !== "Error" ? `${err.name}: ` : "";
    const message = `${name}${describe(err).split("\n", 1)[0]}`;
    await send({ type: "load-error", message }).catch(() => {});
    process.exit(1);
  }
  process.on("message", (/** @type {unknown} */ raw) => {
    const msg = /** @type {HostMessage | null} */ (raw);
    if (msg?.type === "invoke") void invoke(mod, msg);
    else if (msg?.type === "cancel")
      inFlight.get(msg.id)?.abort(new Error("the run was cancelled"));
  });
  await send({ type: "ready" });
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
