/**
 * `/v4/{project}/{app}/{path…}` on a custom-runtime app: any method and path, forwarded to the
 * app as it came (its answer streamed back), or sent to it in the background (`?async=true`).
 * A run is recorded by method and path, never the query (it may carry secrets).
 */
import type { Context } from "hono";
import type { WorkerEnv } from "../env.ts";
import { appHeaders, forwardToHost } from "../host.ts";
import {
  accept,
  cappedBody,
  deliver,
  MAX_RUN_BODY_BYTES,
  reportingFailure,
  runCallOf,
  withoutRunletParameters,
} from "../run-call.ts";
import { answerOutcome } from "../runs/outcome.ts";

/** Headers of the caller's request that describe its framing, not the app's request. */
const FRAMING = ["host", "content-length", "transfer-encoding", "connection"];

export async function forwardToApp(c: Context<WorkerEnv>) {
  const call = runCallOf(c);
  const url = new URL(c.req.url);
  // The path after the app exactly as sent (still percent-encoded), and the query.
  const path = url.pathname.slice(`/v4/${call.project}/${call.app}`.length) || "/";
  const pathAndQuery = `${path}${withoutRunletParameters(url.search)}`;
  const fn = `${c.req.method} ${path}`;

  if (call.isAsync) {
    // The host sends the app a request of its own.
    const sent = appHeaders(c.req.raw.headers);
    for (const name of FRAMING) sent.delete(name);
    const request = { method: c.req.method, pathAndQuery, headers: Object.fromEntries(sent) };
    return accept(c, call, fn, await cappedBody(c), request);
  }

  const target = { project: call.project, app: call.app, pathAndQuery, runId: call.runId };
  const answer = await reportingFailure(c, call, fn, () => forwardToHost(c.env, target, c.req.raw));
  const runTimeMs = Date.now() - call.startedAt;
  let body = answer.body;
  if (call.webhook) {
    // The caller's copy streams on; the delivery's copy is read alongside it.
    const [toCaller, toWebhook] = body ? body.tee() : [null, null];
    body = toCaller;
    const text = toWebhook ? readCapped(toWebhook, MAX_RUN_BODY_BYTES) : Promise.resolve("");
    const contentType = answer.headers.get("content-type");
    c.executionCtx.waitUntil(
      text.then((t) =>
        deliver(c, call, fn, answerOutcome(answer.status, contentType, t, runTimeMs)),
      ),
    );
  }
  return new Response(body, { status: answer.status, headers: new Headers(answer.headers) });
}

/** Reads at most `limit` bytes of a stream as text; undefined if it holds more. */
async function readCapped(stream: ReadableStream<Uint8Array>, limit: number) {
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (let r = await reader.read(); !r.done; r = await reader.read()) {
    size += r.value.byteLength;
    if (size > limit) {
      await reader.cancel();
      return undefined;
    }
    chunks.push(r.value);
  }
  const all = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    all.set(chunk, at);
    at += chunk.byteLength;
  }
  return new TextDecoder().decode(all);
}
