import type { IncomingMessage } from "node:http";
import { functionInputOf } from "../../common/function-input.ts";
import { HttpError } from "./errors.ts";

function tooLarge(limit: number): HttpError {
  return new HttpError(413, `the request body is larger than ${limit / 1024 / 1024} MiB`);
}

/**
 * Reads the whole request body, refusing it with 413 as soon as it passes `limit` bytes. A
 * refused body is left as it is, not destroyed: destroying a request resets its connection
 * under a client still sending, which may lose the answer. The server reads or discards the
 * rest once the 413 is written (common/unread-body.ts).
 */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers["content-length"] ?? 0);
  if (declared > limit) return Promise.reject(tooLarge(limit));
  // Read by someone else already: nothing is left.
  if (req.readableEnded) return Promise.resolve(Buffer.alloc(0));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const stop = () => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("close", onClose);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        stop();
        reject(tooLarge(limit));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      stop();
      resolve(Buffer.concat(chunks, size));
    };
    // The client went away before the end of its body.
    const onClose = () => {
      stop();
      reject(new Error("the request was aborted"));
    };
    req.on("data", onData);
    req.once("end", onEnd);
    req.once("close", onClose);
  });
}

/** The body as JSON: an empty body is `null` (common/function-input.ts). */
export function parseJsonBody(body: Buffer): unknown {
  const input = functionInputOf(body);
  if (!input.ok) throw new HttpError(400, input.message);
  return input.value;
}
