/**
 * A Node HTTP server answers a request before its body is read (a 413 from Content-Length, a
 * 401, a 404) without the client seeing a reset:
 *
 * - The body declares at most `drainBytes`: the connection stays open. Once the answer is
 *   written, the rest of the body is read and thrown away, so the next request on the
 *   connection is parsed where it starts; a client that stops sending it for `drainMs` loses the
 *   connection (it is stalled anyway).
 * - The body is larger, or of unknown length (chunked): the answer says `Connection: close`.
 *   Once it is written the server half-closes (FIN) and keeps reading and throwing away what the
 *   client still sends — until the body ends, the client closes, `lingerMs` pass or `lingerBytes`
 *   arrive — and only then closes the socket. Closing it at once, as Node does for
 *   `Connection: close`, resets a client still writing, and a reset can discard the answer
 *   before the client reads it.
 *
 * Node's own clean-up of an unread body (`IncomingMessage._dump`) runs only when nobody began
 * to read it. @hono/node-server begins reading as soon as anything touches the request's body
 * (hono's bodyLimit checks `c.req.raw.body` before Content-Length), through `Readable.toWeb`,
 * which pauses the request whenever its queue is full: the rest of a refused body was never
 * read, and after 500 ms @hono/node-server's own drain closed the connection that its client
 * was about to reuse (UND_ERR_SOCKET "other side closed" on the next request). Serve Hono with
 * `autoCleanupIncoming: false` beside this: this module does that work.
 *
 * Node only (the control plane's and the runtime host's servers); the Worker never imports it.
 */
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { Socket } from "node:net";

export interface UnreadBodyLimits {
  /** The largest declared body whose rest is read to keep the connection. */
  drainBytes: number;
  /** How long the rest of such a body may take. */
  drainMs: number;
  /** How long a connection being closed keeps reading after its answer. */
  lingerMs: number;
  /** How much it reads then. */
  lingerBytes: number;
}

export const UNREAD_BODY_LIMITS: UnreadBodyLimits = {
  drainBytes: 4 * 1024 * 1024,
  drainMs: 10_000,
  lingerMs: 5_000,
  lingerBytes: 64 * 1024 * 1024,
};

/** Applies the rules above to every request `server` receives. */
export function answerUnreadBodies(server: Server, limits = UNREAD_BODY_LIMITS): void {
  // First, so that even an answer written synchronously by the app's listener is seen.
  server.prependListener("request", (req: IncomingMessage, res: ServerResponse) =>
    watch(req, res, limits),
  );
}

function watch(req: IncomingMessage, res: ServerResponse, limits: UnreadBodyLimits): void {
  const writeHead = res.writeHead;
  // Own property on this one answer: every head, explicit or implicit, goes through writeHead.
  res.writeHead = function (this: ServerResponse, ...args: unknown[]) {
    if (!req.complete && !drainable(req, limits.drainBytes)) this.setHeader("connection", "close");
    return (writeHead as (...a: unknown[]) => ServerResponse).apply(this, args);
  } as ServerResponse["writeHead"];

  const socket = req.socket;
  // Before Node's own 'finish' listener, which closes a `Connection: close` socket with
  // destroySoon() (FIN, then close() however much the client is still sending): for this one
  // call, that becomes a lingering close. The override is gone once 'finish' has run.
  res.prependOnceListener("finish", () => {
    if (req.complete) return;
    discardRest(req);
    socket.destroySoon = () => lingeringClose(socket, req, limits);
  });
  res.once("finish", () => {
    if (Object.hasOwn(socket, "destroySoon")) Reflect.deleteProperty(socket, "destroySoon");
    if (!req.complete && !socket.destroyed) closeIfStalled(socket, req, limits.drainMs);
  });
}

/** Whether the body's declared length is known and small enough to read to its end. */
function drainable(req: IncomingMessage, drainBytes: number): boolean {
  if (req.headers["transfer-encoding"] !== undefined) return false;
  const declared = Number(req.headers["content-length"] ?? 0);
  return Number.isFinite(declared) && declared <= drainBytes;
}

/**
 * The answer is complete, so whoever read the body is done with it: its readers go (a reader
 * that pauses would stall the rest, as Node's own `_dump` knows) and the body flows to nowhere.
 * 'end' and 'error' listeners stay, so a reader's stream still ends.
 */
function discardRest(req: IncomingMessage): void {
  req.removeAllListeners("data");
  req.resume();
}

function closeIfStalled(socket: Socket, req: IncomingMessage, drainMs: number): void {
  const timer = setTimeout(() => socket.destroy(), drainMs);
  timer.unref();
  const done = () => clearTimeout(timer);
  req.once("end", done);
  socket.once("close", done);
}

/** FIN after the answer; the socket is closed once the client has nothing more to send. */
function lingeringClose(socket: Socket, req: IncomingMessage, limits: UnreadBodyLimits): void {
  socket.end();
  let received = 0;
  const close = () => {
    clearTimeout(timer);
    req.off("data", count);
    socket.destroy();
  };
  const count = (chunk: Buffer) => {
    received += chunk.length;
    if (received > limits.lingerBytes) close();
  };
  const timer = setTimeout(close, limits.lingerMs);
  timer.unref();
  req.on("data", count);
  req.once("end", close);
  socket.once("end", close);
  socket.once("close", () => clearTimeout(timer));
}
