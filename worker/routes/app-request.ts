/**
 * `/v4/{project}/{app}/{path…}` on a custom-runtime app: any method and path, forwarded to the
 * app as it came (its answer streamed back), or sent to it in the background (`?async=true`).
 * A run is recorded by method and path, never the query (it may carry secrets).
 */
import type { Context } from "hono";
import { bodyOf } from "../../common/bytes.ts";
import type { WorkerEnv } from "../env.ts";
import { RunApiError } from "../errors.ts";
import { appHeaders, forwardToHost } from "../host-forward.ts";
import { answeredOnce, keyOfCall } from "../idempotency.ts";
import {
  accept,
  cappedBody,
  deliver,
  MAX_RUN_BODY_BYTES,
  type RunCall,
  reportingFailure,
  runCallOf,
  withoutRunletParameters,
} from "../run-call.ts";
import { answerOutcome, failed } from "../runs/outcome.ts";
import { readCapped } from "../streams.ts";

/** Headers of the caller's request that describe its framing, not the app's request. */
const FRAMING = ["host", "content-length", "transfer-encoding", "connection"];

/** What HTTP allows in no header value (RFC 9110 5.5): controls other than tab, and DEL. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding them is the point.
const CONTROL = /[\u0000-\u0008\u000a-\u001f\u007f]/;

/**
 * workerd takes a header value with a control character, the runtime host's HTTP parser does
 * not: a sync call was answered with the host's own 400, without a run id and on no record, and
 * an async one was accepted (202) and then failed. It is refused here, before any run.
 */
function refuseControlCharacters(headers: Headers): void {
  for (const [name, value] of appHeaders(headers)) {
    const found = CONTROL.exec(value);
    if (!found) continue;
    const code = found[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, "0");
    throw new RunApiError(
      400,
      `header '${name}' holds a control character (U+${code}), which HTTP does not allow in a header value`,
    );
  }
}

export async function forwardToApp(c: Context<WorkerEnv>) {
  const call = runCallOf(c);
  refuseControlCharacters(c.req.raw.headers);
  const url = new URL(c.req.url);
  // The path after the app exactly as sent (still percent-encoded), and the query.
  const path = url.pathname.slice(`/v4/${call.project}/${call.app}`.length) || "/";
  const pathAndQuery = `${path}${withoutRunletParameters(url.search)}`;
  const fn = `${c.req.method} ${path}`;

  // A key needs the body whole (its fingerprint), and a body without a Content-Length is read
  // here up to 10 MiB: a stream cut at the limit would reach the app as a shorter, whole body.
  // Otherwise a sync call's body streams to the app, its declared length checked already.
  const unsized = c.req.raw.body !== null && c.req.header("content-length") === undefined;
  const whole = call.isAsync || call.idempotencyKey !== undefined || unsized;
  const buffered = whole ? await cappedBody(c) : null;
  const key = buffered ? await keyOfCall(c, call, fn, buffered) : undefined;
  if (call.isAsync) {
    // The host sends the app a request of its own.
    const sent = appHeaders(c.req.raw.headers);
    for (const name of FRAMING) sent.delete(name);
    const request = { method: c.req.method, pathAndQuery, headers: Object.fromEntries(sent) };
    return accept(c, call, fn, buffered as ArrayBuffer, request, key);
  }
  return answeredOnce(c, call, key, () => forward(c, call, fn, pathAndQuery, buffered));
}

/** A sync call: the app's answer streamed back, its webhook's delivery read alongside. */
async function forward(
  c: Context<WorkerEnv>,
  call: RunCall,
  fn: string,
  pathAndQuery: string,
  buffered: ArrayBuffer | null,
) {
  const { project, app, runId } = call;
  const { replicaConcurrency: concurrency, capacity } = c.var.app.scaling;
  const { startTimeout } = c.var.app;
  const background = (work: Promise<unknown>) => c.executionCtx.waitUntil(work);
  const target = {
    ...{ project, app, pathAndQuery, runId, concurrency, capacity, startTimeout },
    background,
  };
  const { answer, host } = await reportingFailure(c, call, fn, () =>
    forwardToHost(c.env, target, c.req.raw, buffered),
  );
  // Until the answer's last byte: a streamed one (server-sent events) runs until it ends.
  const runTimeMs = () => Date.now() - call.startedAt;
  let body = answer.body;
  if (call.webhook) {
    // The caller's copy streams on; the delivery's copy is read alongside it.
    const [toCaller, toWebhook] = body ? body.tee() : [null, null];
    body = toCaller;
    // workerd has undone the app's content-encoding already; a body that is not text goes
    // base64, as an async run's does (runtime-host/runtimes/custom/buffered.ts).
    const read = toWebhook
      ? readCapped(toWebhook, MAX_RUN_BODY_BYTES).then((b) => b && bodyOf(new Uint8Array(b)))
      : Promise.resolve({ body: "" });
    const contentType = answer.headers.get("content-type");
    c.executionCtx.waitUntil(
      read.then(
        (body) =>
          deliver(c, call, fn, answerOutcome(answer.status, contentType, body, runTimeMs()), host),
        // The app's answer broke off: the delivery says so rather than never being made.
        () => deliver(c, call, fn, failed("the app's answer was cut off", runTimeMs()), host),
      ),
    );
  }
  return new Response(body, { status: answer.status, headers: asWritten(answer) });
}

/**
 * The headers of the app's answer. One the app streams (no `Content-Length`) reaches its caller
 * as the app writes it: the edge compresses text and JSON for a caller that accepts gzip or br
 * (Cloudflare does, and wrangler's dev server as it does), and its encoder held the bytes until
 * the answer ended, so a `text/plain` token stream arrived whole at its end, and one cut off
 * midway arrived as nothing. `Content-Encoding: identity` says the body goes as it is, which the
 * edge leaves alone. An answer with its length, or encoded by the app, is compressed as before.
 */
function asWritten(answer: Response): Headers {
  const headers = new Headers(answer.headers);
  const streamed = answer.body !== null && !headers.has("content-length");
  if (streamed && !headers.has("content-encoding")) headers.set("content-encoding", "identity");
  return headers;
}
