/**
 * One buffered request to a custom app's replica, as an async run sends it: the whole request
 * at once, the whole answer read (at most 10 MiB), cut off past the run's limit or once its
 * signal aborts (the run was cancelled). The app is asked for its answer unencoded
 * (`Accept-Encoding: identity`, whatever the request said: it goes to a webhook inside JSON);
 * one encoded anyway is decoded (content-encoding.ts). Its body is passed as text when it is
 * UTF-8, else as base64, saying so.
 */
import { type IncomingMessage, request } from "node:http";
import { bodyOf } from "../../../common/bytes.ts";
import type { HttpAnswer } from "../../../common/protocol/host.ts";
import { MAX_INVOKE_BODY_BYTES } from "../../limits.ts";
import { type HttpWorkload, WorkloadError } from "../../pool/workload.ts";
import type { HttpCall } from "../../runs/types.ts";
import { decodeBody } from "./content-encoding.ts";
import { unanswered } from "./unanswered.ts";

/** A custom app's answer could not be had; the message is safe to show its caller. */
export class AppAnswerError extends Error {}

/**
 * Sends `call` to the replica and resolves with its answer. Past `limitMs` it rejects with a
 * `timeout` WorkloadError; an answer too large, a server that fails, or an answer cut off before
 * its end (the app's process died mid-answer) rejects with `AppAnswerError`. Unless `keep`, the
 * answer's body is read and let go (nobody reads it: a run without a webhook), of any size.
 */
export function sendBuffered(
  replica: HttpWorkload,
  call: HttpCall,
  limitMs: number,
  signal: AbortSignal,
  keep = true,
): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const upstream = request(`${replica.origin}${call.pathAndQuery}`, {
      method: call.method,
      headers: {
        ...call.headers,
        // The caller's own Accept-Encoding cannot be told from workerd's (it sets `br, gzip` on
        // every request locally), and no caller reads the app's encoded bytes.
        "accept-encoding": "identity",
        "content-length": String(call.body.length),
      },
      socketPath: replica.socketPath,
      signal,
    });
    let timedOut = false;
    const timer = setTimeout(() => {
      // Its request is closed; the app's server and the other requests it serves go on.
      timedOut = true;
      upstream.destroy();
      reject(new WorkloadError({ kind: "timeout", ms: limitMs }));
    }, limitMs);
    upstream.on("response", (answer) => {
      const chunks: Buffer[] = [];
      let size = 0;
      answer.on("data", (chunk: Buffer) => {
        if (!keep) return;
        size += chunk.length;
        if (size > MAX_INVOKE_BODY_BYTES) {
          upstream.destroy();
          clearTimeout(timer);
          reject(new AppAnswerError("the app's answer is larger than 10 MiB"));
          return;
        }
        chunks.push(chunk);
      });
      answer.on("end", () => {
        clearTimeout(timer);
        answerOf(answer, keep ? Buffer.concat(chunks) : undefined).then(resolve, reject);
      });
      // Once the answer has begun, a connection that breaks (the app's process died, its server
      // reset it) is heard on the answer, not on the request: an `error` (with a listener) and
      // `close` before `end`. Without these the run waited out its whole limit.
      const cutOff = (reason: string) => {
        clearTimeout(timer);
        if (timedOut) return; // destroyed here: the timeout has said so
        reject(new AppAnswerError(`the app's answer was cut off: ${reason}`));
      };
      answer.on("error", (err: NodeJS.ErrnoException) => cutOff(err.code ?? err.message));
      answer.on("close", () => {
        if (!answer.complete) cutOff("the connection closed before its end");
      });
    });
    upstream.on("error", (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      if (timedOut) return;
      void unanswered(replica, err).then((message) => reject(new AppAnswerError(message)));
    });
    upstream.end(call.body);
  });
}

/** The app's whole answer as it is reported: decoded, its body text or base64. */
async function answerOf(answer: IncomingMessage, bytes?: Buffer): Promise<HttpAnswer> {
  const status_code = answer.statusCode ?? 502;
  const content_type = answer.headers["content-type"] ?? null;
  if (!bytes) return { status_code, content_type, body: "" }; // not kept
  const decoded = await decodeBody(bytes, answer.headers["content-encoding"]);
  if (!Buffer.isBuffer(decoded)) throw new AppAnswerError(decoded.error);
  return { status_code, content_type, ...bodyOf(decoded) };
}
