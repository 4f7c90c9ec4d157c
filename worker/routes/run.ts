import type { Context, Hono } from "hono";
import { HEADER } from "../../common/consts.ts";
import { resolveApp, verifyCaller } from "../auth.ts";
import type { WorkerEnv } from "../env.ts";
import { errorResponse, RunApiError } from "../errors.ts";
import { appHeaders, forwardToHost, invokeOnHost } from "../host.ts";
import { answerOutcome } from "../runs/outcome.ts";
import { viewOrThrow } from "../runs/refusal.ts";
import { newRunId, shardFor } from "../runs/shards.ts";
import type { AppRequest, NewRun, Outcome, WebhookRequest } from "../runs/types.ts";
import { reportRun } from "../runs-index.ts";
import { webhookTarget } from "../webhooks/target.ts";

/** Largest request body a run accepts. */
export const MAX_RUN_BODY_BYTES = 10 * 1024 * 1024;

/** A result object's numeric `status_code` sets the HTTP status of a synchronous run. */
function statusOf(result: unknown): number {
  if (result && typeof result === "object" && "status_code" in result) {
    const code = (result as { status_code: unknown }).status_code;
    if (typeof code === "number" && Number.isInteger(code) && code >= 200 && code <= 599)
      return code;
  }
  return 200;
}

/**
 * `/v4/{project}/{app}/…`: a synchronous run. Managed runtime: `POST /{function}`. Custom
 * runtime: any method and path, forwarded to the app as it came.
 */
export function registerRun(app: Hono<WorkerEnv>) {
  // A WebSocket handshake (a GET with Upgrade) on any run path gets a clear refusal, not a 404.
  app.use("/v4/*", async (c, next) => {
    if (c.req.header("upgrade")?.toLowerCase() !== "websocket") return next();
    return errorResponse(
      c,
      new RunApiError(
        400,
        "WebSocket connections are not supported; call the run path with an HTTP POST",
      ),
    );
  });
  app.all("/v4/:project/:app", run);
  app.all("/v4/:project/:app/*", run);
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

async function run(c: Context<WorkerEnv>) {
  const startedAt = Date.now();
  const runId = newRunId();
  // Set once the call goes to the runtime host: from then on it is a run, in the runs index.
  // The host reports the runs it served; the Worker those the host failed (or never got).
  let failed: (() => void) | undefined;
  try {
    const { project, app: appName } = c.req.param() as { project: string; app: string };
    const url = new URL(c.req.url);
    // The path after the app exactly as sent (still percent-encoded), and the query.
    const rest = url.pathname.slice(`/v4/${project}/${appName}`.length);
    const caller = await verifyCaller(c.env, c.req.header("authorization"));
    const resolved = await resolveApp(c.env, caller, project, appName);
    const isAsync = asyncFlag(c.req.query("async"));
    const webhook = webhookOf(c);
    const length = Number(c.req.header("content-length") ?? 0);
    if (length > MAX_RUN_BODY_BYTES)
      throw new RunApiError(413, "the request body is larger than 10 MiB");
    const newRun = (fn: string): NewRun => ({
      runId,
      project,
      app: appName,
      fn,
      createdAt: startedAt,
    });
    const ifFailed = (fn: string) => () =>
      c.executionCtx.waitUntil(
        reportRun(c.env, runId, {
          projectId: project,
          app: appName,
          function: fn,
          async: false,
          status: "failure",
          createdAt: startedAt,
          finishedAt: Date.now(),
          runTimeMs: null,
        }),
      );
    const shard = () => shardFor(c.env, project, appName, runId);
    // A sync run's delivery is driven by its run's shard, reached here through waitUntil.
    const deliver = (fn: string, outcome: Outcome) => {
      if (webhook) c.executionCtx.waitUntil(shard().record(newRun(fn), outcome, webhook));
    };
    // Queued in its shard, durable before the 202; a full queue refuses it (429).
    const accept = async (fn: string, body: ArrayBuffer, request?: AppRequest) => {
      const limits = { capacity: resolved.scaling.capacity, queueTimeout: resolved.queueTimeout };
      const refused = await shard().accept(newRun(fn), limits, url.origin, body, webhook, request);
      if (refused) viewOrThrow(refused);
      c.header(HEADER.requestId, runId);
      return c.json({ run_id: runId }, 202);
    };

    if (resolved.runtime === "custom") {
      // Recorded by method and path, never the query (it may carry secrets).
      const path = rest || "/";
      const fn = `${c.req.method} ${path}`;
      const search = withoutRunletParameters(url.search);
      if (isAsync) {
        // The host sends the app a request of its own: this one's framing is not the app's.
        const sent = appHeaders(c.req.raw.headers);
        for (const name of ["host", "content-length", "transfer-encoding", "connection"])
          sent.delete(name);
        const headers = Object.fromEntries(sent);
        const request = { method: c.req.method, pathAndQuery: `${path}${search}`, headers };
        return await accept(fn, await cappedBody(c), request);
      }
      failed = ifFailed(fn);
      const answer = await forwardToHost(
        c.env,
        { project, app: appName, pathAndQuery: `${path}${search}`, runId },
        c.req.raw,
      );
      failed = undefined; // the host answered: it reports the run
      const runTimeMs = Date.now() - startedAt;
      const headers = new Headers(answer.headers);
      headers.set(HEADER.requestId, runId);
      let body = answer.body;
      if (webhook) {
        // The caller's copy streams on; the delivery's copy is read alongside it.
        const [toCaller, toWebhook] = body ? body.tee() : [null, null];
        body = toCaller;
        const text = toWebhook ? readCapped(toWebhook, MAX_RUN_BODY_BYTES) : Promise.resolve("");
        const contentType = answer.headers.get("content-type");
        c.executionCtx.waitUntil(
          text.then((t) => deliver(fn, answerOutcome(answer.status, contentType, t, runTimeMs))),
        );
      }
      return new Response(body, { status: answer.status, headers });
    }

    const fn = /^\/([^/]+)$/.exec(rest)?.[1];
    if (c.req.method !== "POST" || fn === undefined) {
      c.header("allow", "POST");
      throw new RunApiError(
        405,
        `'${appName}' runs functions: POST /v4/${project}/${appName}/{function}`,
      );
    }
    let name: string;
    try {
      name = decodeURIComponent(fn);
    } catch {
      throw new RunApiError(400, "the function name is not valid percent-encoding");
    }
    const body = await cappedBody(c);
    if (isAsync) return await accept(name, body);

    failed = ifFailed(name);
    const outcome = await invokeOnHost(c.env, { project, app: appName, fn: name, runId }, body);
    failed = undefined; // the host answered: it reports the run
    c.header(HEADER.requestId, runId);
    deliver(
      name,
      outcome.ok
        ? { status: "success", result: outcome.result, run_time_ms: outcome.run_time_ms }
        : { status: "failure", error: outcome.error, run_time_ms: outcome.run_time_ms },
    );
    if (outcome.ok) {
      return c.json(
        { run_id: runId, result: outcome.result, run_time_ms: outcome.run_time_ms },
        statusOf(outcome.result) as 200,
      );
    }
    return c.json(
      {
        run_id: runId,
        error: { message: outcome.error.message },
        run_time_ms: outcome.run_time_ms,
      },
      500,
    );
  } catch (err) {
    failed?.();
    return errorResponse(c, err, runId);
  }
}

/** The request body, refused past 10 MiB (a Content-Length over it was refused before). */
async function cappedBody(c: Context<WorkerEnv>): Promise<ArrayBuffer> {
  const body = await c.req.arrayBuffer();
  if (body.byteLength > MAX_RUN_BODY_BYTES)
    throw new RunApiError(413, "the request body is larger than 10 MiB");
  return body;
}

/** Runlet's own query parameters on a run call. */
const RUNLET_PARAMETERS = new Set(["async", "webhookEndpoint"]);

/**
 * The query for a custom app: as sent, less Runlet's own parameters; the others keep their
 * exact encoding.
 */
function withoutRunletParameters(search: string): string {
  const kept = search
    .slice(1)
    .split("&")
    .filter((part) => part !== "" && !RUNLET_PARAMETERS.has(part.split("=")[0] ?? ""));
  return kept.length ? `?${kept.join("&")}` : "";
}

/** `?async=`: `true` runs in the background, `false` (or no parameter) answers with the result. */
function asyncFlag(raw: string | undefined): boolean {
  if (raw === undefined || raw === "false") return false;
  if (raw === "true") return true;
  throw new RunApiError(400, `async must be 'true' or 'false', got '${raw.slice(0, 40)}'`);
}

/** The largest `X-Webhook-Secret` accepted: an HMAC key longer than this adds nothing. */
const MAX_SECRET_LENGTH = 1024;

/** `?webhookEndpoint=` and the `X-Webhook-Secret` that signs its deliveries. */
function webhookOf(c: Context<WorkerEnv>): WebhookRequest | undefined {
  const target = webhookTarget(
    c.req.query("webhookEndpoint"),
    c.env.RUNLET_WEBHOOK_ALLOW_PRIVATE === "1",
  );
  if (!target) return undefined;
  const secret = c.req.header(HEADER.webhookSecret) || undefined;
  if (secret && secret.length > MAX_SECRET_LENGTH)
    throw new RunApiError(
      400,
      `${HEADER.webhookSecret} is longer than ${MAX_SECRET_LENGTH} characters`,
    );
  return { url: target.href, ...(secret ? { secret } : {}) };
}
