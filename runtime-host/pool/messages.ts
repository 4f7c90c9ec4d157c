/**
 * The IPC message catalog between the host and a managed replica (`runtimes/managed/shim.mjs`,
 * which imports these types through JSDoc). Messages travel as JSON over Node's IPC channel.
 *
 * host → child: `invoke` (one call; several may be in flight, told apart by `id`), `cancel`
 * (abort that call's `ctx.signal`).
 * child → host: `ready` once the app's module is imported, or `load-error` (then it exits);
 * one `result` per `invoke`.
 */
import { z } from "zod";

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

export type HostMessage = InvokeMessage | CancelMessage;

/** child → host: the app's module is imported; calls may come. */
export interface ReadyMessage {
  type: "ready";
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
  | { type: "result"; id: string; ok: false; notFound: true };

export type ChildMessage = ReadyMessage | LoadErrorMessage | ResultMessage;

/**
 * The child runs the app's code, which can call `process.send` itself: the host trusts no
 * message's shape and checks each against this schema.
 */
export const childMessageSchema: z.ZodType<ChildMessage> = z.union([
  z.object({ type: z.literal("ready") }),
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
  }),
]);
