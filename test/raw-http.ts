/**
 * A bare HTTP/1.1 connection for tests that must see what a client library hides: whether a
 * connection was reset (ECONNRESET, EPIPE) or closed cleanly, which request went on which
 * connection, and a body still being written after the answer came. Answers must carry a
 * Content-Length (every JSON answer of our servers does).
 */
import { type ClientRequest, request as httpRequest, type OutgoingHttpHeaders } from "node:http";
import { connect, type Socket } from "node:net";

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export interface RawConnection {
  readonly socket: Socket;
  /** Errors the socket reported: a reset shows here. */
  readonly errors: Error[];
  /** Whether the server's FIN has arrived. */
  readonly ended: () => boolean;
  /** Resolves once the socket is fully closed. */
  readonly closed: Promise<void>;
  /** Writes and waits until the bytes are handed to the kernel; false once the socket failed. */
  write(data: string | Buffer): Promise<boolean>;
  /** The next complete answer on this connection. */
  response(timeoutMs?: number): Promise<RawResponse>;
}

export async function rawConnect(url: string): Promise<RawConnection> {
  const { hostname, port } = new URL(url);
  // Half-open allowed: like any TCP client, it may keep sending after the server's FIN.
  const socket = connect({ host: hostname, port: Number(port), allowHalfOpen: true });
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  const errors: Error[] = [];
  let ended = false;
  let buffered = Buffer.alloc(0);
  let wake = () => {};
  socket.on("error", (err) => {
    errors.push(err);
    wake();
  });
  socket.on("end", () => {
    ended = true;
    wake();
  });
  socket.on("data", (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk]);
    wake();
  });
  const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));

  /** A complete answer at the start of `buffered`, taken off it; else undefined. */
  function take(): RawResponse | undefined {
    const headEnd = buffered.indexOf("\r\n\r\n");
    if (headEnd < 0) return undefined;
    const [statusLine = "", ...lines] = buffered
      .subarray(0, headEnd)
      .toString("latin1")
      .split("\r\n");
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(":");
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    const length = Number(headers["content-length"] ?? 0);
    if (buffered.length < headEnd + 4 + length) return undefined;
    const body = buffered.subarray(headEnd + 4, headEnd + 4 + length).toString("utf8");
    buffered = buffered.subarray(headEnd + 4 + length);
    return { status: Number(statusLine.split(" ")[1]), headers, body };
  }

  return {
    socket,
    errors,
    ended: () => ended,
    closed,
    write(data) {
      if (socket.destroyed || errors.length > 0) return Promise.resolve(false);
      return new Promise((resolve) => socket.write(data, (err) => resolve(!err)));
    },
    async response(timeoutMs = 5_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const answer = take();
        if (answer) return answer;
        if (ended || errors.length > 0 || socket.destroyed)
          throw new Error(`no answer: ${errors[0]?.message ?? "the connection closed"}`);
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`no answer within ${timeoutMs} ms`);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, left);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
    },
  };
}

/** The head of a request with a JSON body of `length` bytes (chunked when `length` is null). */
export function requestHead(
  method: string,
  path: string,
  length: number | null,
  headers: Record<string, string> = {},
): string {
  const lines = [`${method} ${path} HTTP/1.1`, "host: 127.0.0.1", "content-type: application/json"];
  lines.push(length === null ? "transfer-encoding: chunked" : `content-length: ${length}`);
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  return `${lines.join("\r\n")}\r\n\r\n`;
}

/** One chunk of a chunked body. */
export const chunk = (data: Buffer | string) =>
  Buffer.concat([
    Buffer.from(`${Buffer.byteLength(data).toString(16)}\r\n`),
    Buffer.from(data),
    Buffer.from("\r\n"),
  ]);

/**
 * A client that does not stop at the answer to its declared body: it sends `bytes` more of it,
 * then closes its side and waits until the connection has ended (its `errors` say how).
 */
export async function sendOnThenClose(conn: RawConnection, bytes: number): Promise<void> {
  const part = Buffer.alloc(256 * 1024, "x");
  for (let sent = 0; sent < bytes; sent += part.length) await conn.write(part);
  conn.socket.end();
  await conn.closed;
}

/**
 * A request through node:http, for what fetch will not send (a Host of one's choosing, a chunked
 * body, `Expect: 100-continue`): `send` writes its body and ends it. Its status and body text.
 */
export function nodeRequest(
  url: string,
  init: { method: string; headers: OutgoingHttpHeaders },
  send: (req: ClientRequest) => void,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, init);
    req.on("response", (res) => {
      let body = "";
      res.on("data", (chunk) => {
        body += chunk;
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", reject);
    send(req);
  });
}
