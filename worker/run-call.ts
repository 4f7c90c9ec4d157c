/**
 * What every run call shares, whatever the app's runtime: its query (`async`, `webhookEndpoint`)
 * and secret header, its body limit, and what becomes of the run — queued in its shard (async),
 * its webhook delivery handed to its shard (sync), or, when the runtime host never answered,
 * its failure reported to the runs index.
 */
import type { Context } from "hono";
import { jsonBytesOver } from "../common/bytes.ts";
import { didYouMean } from "../common/closest.ts";
import { HEADER, MAX_WEBHOOK_SECRET_LENGTH } from "../common/consts.ts";
import { timeOfId } from "../common/ids.ts";
import { type WorkerEnv, workerOrigin } from "./env.ts";
import { RunApiError } from "./errors.ts";
import { keyOfHeader, replayed } from "./idempotency.ts";
import type { Target } from "./placement.ts";
import { notRecorded } from "./runs/not-recorded.ts";
import { shardFor } from "./runs/shards.ts";
import type { AppRequest, IdempotencyKey, NewRun, Outcome, WebhookRequest } from "./runs/types.ts";
import { reportRun } from "./runs-index.ts";
import { readCapped } from "./streams.ts";
import { webhookTarget } from "./webhooks/target.ts";

/** Largest request body a run accepts. */
export const MAX_RUN_BODY_BYTES = 10 * 1024 * 1024;

/** Runlet's own query parameters on a run call. */
export const RUNLET_PARAMETERS: ReadonlySet<string> = new Set(["async", "webhookEndpoint"]);

/**
 * A route that takes only `takes` as query parameters refuses any other, 400 naming it and the
 * one likely meant (`aliases`: known misspellings), then what the route takes (`says`): a typo
 * was ignored, and did what the call meant not to (a sync run, a running run cancelled).
 */
export function refuseUnknownQuery(
  c: Context<WorkerEnv>,
  takes: readonly string[],
  says: string,
  aliases?: Record<string, string>,
): void {
  for (const name of new URL(c.req.url).searchParams.keys()) {
    if (takes.includes(name)) continue;
    throw new RunApiError(
      400,
      `unknown query parameter '${name.slice(0, 64)}'${didYouMean(name, takes, aliases)}: ${says}`,
    );
  }
}

export interface RunCall {
  /** The run's id; a call with an idempotency key moves it to the key's shard. */
  runId: string;
  project: string;
  app: string;
  startedAt: number;
  isAsync: boolean;
  webhook: WebhookRequest | undefined;
  /** The `Idempotency-Key` sent, checked (worker/idempotency.ts). */
  idempotencyKey: string | undefined;
  /** The run's record, once its function (or `METHOD /path`) is known. */
  run(fn: string): NewRun;
}

/** Reads the run call's own parameters; 400 and 413 before anything runs. */
export function runCallOf(c: Context<WorkerEnv>): RunCall {
  const startedAt = Date.now();
  const runId = c.var.runId as string;
  const project = c.req.param("project") as string;
  const app = c.req.param("app") as string;
  const isAsync = flagOf(c, "async");
  const webhook = webhookOf(c);
  if (Number(c.req.header("content-length") ?? 0) > MAX_RUN_BODY_BYTES)
    throw new RunApiError(413, TOO_LARGE);
  const idempotencyKey = keyOfHeader(c.req.header(HEADER.idempotencyKey));
  const call: RunCall = {
    runId,
    project,
    app,
    startedAt,
    isAsync,
    webhook,
    idempotencyKey,
    // The run's creation is the time in its id, as the runtime host reports it to the runs index
    // (the Worker's and the host's clocks would differ by a few ms).
    run: (fn) => ({
      runId: call.runId,
      project,
      app,
      fn,
      createdAt: timeOfId(call.runId) ?? startedAt,
    }),
  };
  return call;
}

const TOO_LARGE = "the request body is larger than 10 MiB";

/**
 * The request body, refused past 10 MiB: a Content-Length over it was refused before, and a
 * body without one (chunked) is read only up to the limit, never whole.
 */
export async function cappedBody(c: Context<WorkerEnv>): Promise<ArrayBuffer> {
  const { body } = c.req.raw;
  if (!body) return new ArrayBuffer(0);
  const read = await readCapped(body, MAX_RUN_BODY_BYTES);
  if (!read) throw new RunApiError(413, TOO_LARGE);
  return read;
}

/**
 * Queues the run in its shard, durable before the 202; a full queue refuses it (429), and a
 * shard that cannot record it answers why (507/503, runs/not-recorded.ts). A key seen before
 * answers with its first run instead.
 */
export async function accept(
  c: Context<WorkerEnv>,
  call: RunCall,
  fn: string,
  body: ArrayBuffer,
  request?: AppRequest,
  key?: IdempotencyKey,
): Promise<Response> {
  const { scaling, queueTimeout } = c.var.app;
  const limits = {
    capacity: scaling.capacity,
    queueTimeout,
    replicaConcurrency: scaling.replicaConcurrency,
  };
  const shard = shardFor(c.env, call.project, call.app, call.runId);
  const run = { ...call.run(fn), appId: c.var.app.id };
  const origin = workerOrigin(c.env);
  const seen = await shard
    .accept(run, limits, origin, body, call.webhook, request, key)
    .catch((err: unknown) => {
      throw notRecorded(err, call.runId);
    });
  if (seen) return replayed(c, seen);
  return c.json({ run_id: call.runId }, 202);
}

/** A sync run's webhook: its delivery is driven by the run's shard, reached through waitUntil. */
export function deliver(
  c: Context<WorkerEnv>,
  call: RunCall,
  fn: string,
  outcome: Outcome,
  host?: Target,
) {
  if (!call.webhook) return;
  const shard = shardFor(c.env, call.project, call.app, call.runId);
  const kept = deliverable(outcome);
  c.executionCtx.waitUntil(shard.record(call.run(fn), kept, call.webhook, host));
}

/**
 * A sync run's outcome as its webhook may take it: a result over 10 MiB (its caller has it) is
 * a failure saying so, as an async run's is; it would not fit the run store's RPC either.
 */
function deliverable(outcome: Outcome): Outcome {
  if (outcome.status !== "success") return outcome;
  const bytes = jsonBytesOver(outcome.result, MAX_RUN_BODY_BYTES);
  if (bytes === undefined) return outcome;
  const message = `the function's result is larger than 10 MiB (${bytes} bytes as JSON): it was answered to its caller, not delivered; a webhook takes at most 10 MiB`;
  return { status: "failure", error: { message }, run_time_ms: outcome.run_time_ms };
}

/**
 * Runs `work` (the call to the runtime host); if it throws before the host answered, the run
 * is reported failed to the runs index — the host reports the runs it served — and delivered
 * failed to its webhook, if it has one (its process died, it ran out of time, no host ran it).
 */
export async function reportingFailure<T>(
  c: Context<WorkerEnv>,
  call: RunCall,
  fn: string,
  work: () => Promise<T>,
): Promise<T> {
  try {
    return await work();
  } catch (err) {
    // The host refused the input before the function ran (no JSON, too deep, too large): no
    // run, as the Worker's refusal of an async call's input makes none, and as `runlet run`
    // says (no run id). It was listed in `runlet runs` as a failed run.
    if (err instanceof RunApiError && err.beforeRun) throw err;
    const runTimeMs = (err instanceof RunApiError ? err.runTimeMs : undefined) ?? null;
    const host = err instanceof RunApiError ? err.host : undefined;
    c.executionCtx.waitUntil(
      reportRun(c.env, call.runId, {
        projectId: call.project,
        app: call.app,
        function: fn,
        async: false,
        status: "failure",
        createdAt: call.run(fn).createdAt,
        finishedAt: Date.now(),
        // Known when it failed on its host once it ran (its process died mid-call).
        runTimeMs,
        ...(err instanceof Error ? { error: err.message } : {}),
        ...(host?.id ? { host: host.id } : {}),
      }),
    );
    const message = err instanceof Error ? err.message : "the run failed";
    const failure = { status: "failure" as const, error: { message }, run_time_ms: runTimeMs };
    deliver(c, call, fn, failure, host);
    throw err;
  }
}

/**
 * The query for a custom app: as sent, less Runlet's own parameters; the others keep their
 * exact encoding.
 */
export function withoutRunletParameters(search: string): string {
  const kept = search
    .slice(1)
    .split("&")
    .filter((part) => part !== "" && !RUNLET_PARAMETERS.has(part.split("=")[0] ?? ""));
  return kept.length ? `?${kept.join("&")}` : "";
}

/**
 * Runlet's query parameter `name`, given once or not at all: given twice, which was meant cannot
 * be told (the first was used, silently).
 */
function onlyOnce(c: Context<WorkerEnv>, name: string): string | undefined {
  const given = c.req.queries(name);
  if (given && given.length > 1) throw new RunApiError(400, `${name} is given more than once`);
  return given?.[0];
}

/**
 * A `true`/`false` query parameter, false when absent: `?async=` (`true` runs in the background)
 * and a cancel's `?onlyIfQueued=`.
 */
export function flagOf(c: Context<WorkerEnv>, name: string): boolean {
  const raw = onlyOnce(c, name);
  if (raw === undefined || raw === "false") return false;
  if (raw === "true") return true;
  throw new RunApiError(400, `${name} must be 'true' or 'false', got '${raw.slice(0, 40)}'`);
}

/** `?webhookEndpoint=` and the `X-Webhook-Secret` that signs its deliveries. */
export function webhookOf(c: Context<WorkerEnv>): WebhookRequest | undefined {
  const target = webhookTarget(
    onlyOnce(c, "webhookEndpoint"),
    c.env.RUNLET_WEBHOOK_ALLOW_PRIVATE === "1",
  );
  if (!target) return undefined;
  const secret = webhookSecretOf(c);
  return { url: target.href, ...(secret ? { secret } : {}) };
}

/**
 * `X-Webhook-Secret`, the key that signs a delivery; 400 when it is too long. The spaces and
 * tabs around it are not the field's value (RFC 9110 §5.5), though workerd keeps the trailing.
 */
export function webhookSecretOf(c: Context<WorkerEnv>): string | undefined {
  const secret = c.req.header(HEADER.webhookSecret)?.replace(/^[ \t]+|[ \t]+$/g, "");
  // Sent empty (a variable that was not set): signed deliveries were meant, none can be made.
  if (secret === "")
    throw new RunApiError(400, `${HEADER.webhookSecret} is empty: send the secret, or no header`);
  if (secret && secret.length > MAX_WEBHOOK_SECRET_LENGTH)
    throw new RunApiError(
      400,
      `${HEADER.webhookSecret} is longer than ${MAX_WEBHOOK_SECRET_LENGTH} characters`,
    );
  return secret;
}
