/**
 * The IPC message catalog between the host and a managed replica (`runtimes/managed/shim.mjs`,
 * which imports these types through JSDoc). Messages travel as JSON over Node's IPC channel.
 *
 * host → child: `load` (a spare process becomes a replica of an app), `invoke` (one call;
 * several may be in flight, told apart by `id`), `cancel` (abort that call's `ctx.signal`).
 * child → host: `spare` once a spare process waits for its app, `ready` once the app's module
 * is imported (naming the functions it exports), or `load-error` (then it exits);
 * one `result` per `invoke`; `log` for what calls write while they run (batches of writes: a
 * call's always before its `result`, as IPC keeps the order).
 */
import * as z from "zod";
import type { CallOutcome } from "./workload.ts";

/** host → child: call the export `fn` with `payload` (the caller's JSON). */
export interface InvokeMessage {
  type: "invoke";
  id: string;
  fn: string;
  payload: unknown;
  runId: string;
  async: boolean;
}

/** host → child: the call `id` was cancelled; its `ctx.signal` aborts. */
export interface CancelMessage {
  type: "cancel";
  id: string;
}

/** host → spare child: the app's files are in the cwd now; take `env` and import them. */
export interface LoadMessage {
  type: "load";
  env: Record<string, string>;
}

export type HostMessage = LoadMessage | InvokeMessage | CancelMessage;

/**
 * child → host: the app's module is imported; calls may come. `exports`: the names of the
 * functions a call can name (a deploy's trial refuses a module with none).
 */
export interface ReadyMessage {
  type: "ready";
  exports: string[];
}

/** child → host: a spare process is up and waits for a `load`. */
export interface SpareMessage {
  type: "spare";
}

/** child → host: the app's module could not be imported; `message` is one line, no stack. */
export interface LoadErrorMessage {
  type: "load-error";
  message: string;
}

/** child → host: the outcome of the `invoke` with the same `id`. */
export type ResultMessage =
  | { type: "result"; id: string; ok: true; value?: unknown }
  | { type: "result"; id: string; ok: false; error: { message: string } }
  | { type: "result"; id: string; ok: false; notFound: true; exports?: string[] };

/**
 * Text the run `runId` wrote to one stream (through `ctx.log`, `console.*`, `process.stdout` or
 * `process.stderr`) while it ran: one write, or several written in the same millisecond; `at` is
 * when, in milliseconds since the epoch.
 */
export interface LogEntry {
  runId: string;
  stream: "stdout" | "stderr";
  text: string;
  at: number;
}

/**
 * child → host: what runs wrote, in the order they wrote it (`runtimes/managed/log-batch.mjs`
 * says when a batch is sent). Output outside any call goes to the process's own stdout and
 * stderr instead.
 */
export interface LogMessage {
  type: "log";
  entries: LogEntry[];
}

export type ChildMessage =
  | SpareMessage
  | ReadyMessage
  | LoadErrorMessage
  | ResultMessage
  | LogMessage;

/**
 * The child runs the app's code, which can call `process.send` itself: the host trusts no
 * message's shape and checks each against this schema.
 */
export const childMessageSchema: z.ZodType<ChildMessage> = z.union([
  z.object({ type: z.literal("spare") }),
  z.object({ type: z.literal("ready"), exports: z.array(z.string()) }),
  z.object({
    type: z.literal("log"),
    entries: z.array(
      z.object({
        runId: z.string(),
        stream: z.enum(["stdout", "stderr"]),
        text: z.string(),
        at: z.number(),
      }),
    ),
  }),
  z.object({ type: z.literal("load-error"), message: z.string() }),
  z.object({ type: z.literal("result"), id: z.string(), ok: z.literal(true), value: z.unknown() }),
  z.object({
    type: z.literal("result"),
    id: z.string(),
    ok: z.literal(false),
    error: z.object({ message: z.string() }),
  }),
  z.object({
    type: z.literal("result"),
    id: z.string(),
    ok: z.literal(false),
    notFound: z.literal(true),
    /** The names of the functions the module does export. */
    exports: z.optional(z.array(z.string())),
  }),
]);

/**
 * A message of the child, checked against the schema; undefined for one that fails it. A `result`
 * that fails it still names its call, and that call must not wait for a result until its time
 * limit: it ends as a result saying what was wrong (a call that has ended already ignores it).
 */
export function readChildMessage(raw: unknown): ChildMessage | undefined {
  const parsed = childMessageSchema.safeParse(raw);
  if (parsed.success) return parsed.data;
  if (typeof raw !== "object" || raw === null) return undefined;
  const { type, id, ok } = raw as Record<string, unknown>;
  if (type !== "result" || typeof id !== "string") return undefined;
  const what = ok === true && !("value" in raw) ? "has no value" : "is malformed";
  const message = `the function's result cannot be read: the replica's result message ${what}`;
  return { type: "result", id, ok: false, error: { message } };
}

/** How a call ended, from its result message. */
export function outcomeOf(msg: ResultMessage): CallOutcome {
  if (msg.ok) return { kind: "returned", value: msg.value ?? null };
  if ("notFound" in msg) return { kind: "not-found", exports: msg.exports ?? [] };
  return { kind: "threw", message: msg.error.message };
}
