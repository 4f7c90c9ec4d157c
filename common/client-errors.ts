/**
 * A request that Node's HTTP parser cannot read — a bad request line or header, a broken chunk,
 * a header block too large, a request too slow to arrive — never reaches the app. Node answers
 * it with a bare status line and no body, then destroys the socket at once (a reset, if the
 * client is still sending). Here it is answered like every other refusal: JSON
 * `{"message", "code"}` with `Connection: close`; the socket closes once the client is done
 * sending, or after `lingerMs`.
 *
 * Node only (the control plane's and the runtime host's servers); the Worker never imports it.
 */
import { type Server, type ServerResponse, STATUS_CODES } from "node:http";
import type { Socket } from "node:net";
import { codeOf } from "./errors.ts";

const STATUS: Record<string, number> = {
  HPE_HEADER_OVERFLOW: 431,
  HPE_CHUNK_EXTENSIONS_OVERFLOW: 413,
  ERR_HTTP_REQUEST_TIMEOUT: 408,
};

export function answerClientErrors(server: Server, lingerMs = 2_000): void {
  /** The latest answer on each connection: one being written must not be interleaved. */
  const answers = new WeakMap<Socket, ServerResponse>();
  server.prependListener("request", (req, res) => answers.set(req.socket, res));

  server.on("clientError", (err: NodeJS.ErrnoException & { reason?: string }, socket: Socket) => {
    const answer = answers.get(socket);
    const writing = answer?.headersSent === true && !answer.writableFinished;
    if (err.code === "ECONNRESET" || !socket.writable || writing) {
      socket.destroy();
      return;
    }
    const status = STATUS[err.code ?? ""] ?? 400;
    const body = JSON.stringify({
      message: `the request could not be read: ${err.reason ?? STATUS_CODES[status]}`,
      code: codeOf(status),
    });
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
        "content-type: application/json; charset=utf-8\r\n" +
        `content-length: ${Buffer.byteLength(body)}\r\n` +
        "connection: close\r\n\r\n" +
        body,
    );
    // What the client still sends is read and dropped until it closes its side.
    const timer = setTimeout(() => socket.destroy(), lingerMs);
    timer.unref();
    socket.on("data", () => {});
    socket.resume();
    socket.once("end", () => socket.destroy());
    socket.once("close", () => clearTimeout(timer));
  });
}
