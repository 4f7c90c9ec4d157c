/**
 * `Idempotency-Key` on run calls (IETF httpapi draft "The Idempotency-Key HTTP Header Field";
 * docs/api.md): a key is scoped to its project, app and function (a custom app: method and path),
 * remembered 24 h in the shard its hash picks, beside its run. The same key with the same request
 * is the same run: an async call answers 202 with the first run's id, a sync call the first run's
 * kept answer (409 while it runs); with another request, 422.
 */
import type { Context } from "hono";
import { longestHostAnswerMs } from "../common/app-limits.ts";
import { concatBytes, sha256Hex } from "../common/bytes.ts";
import { HEADER } from "../common/consts.ts";
import type { WorkerEnv } from "./env.ts";
import { RunApiError, renderError } from "./errors.ts";
import { indexedRun } from "./indexed-run.ts";
import { SYNC_LEASE_MS, stillRunning } from "./runs/keys.ts";
import { viewOrThrow } from "./runs/refusal.ts";
import { newRunIdIn, shardFor } from "./runs/shards.ts";
import type { IdempotencyKey, KeptAnswer, KeyClaim, PendingKey } from "./runs/types.ts";
import { readCapped } from "./streams.ts";

/** What a key needs of its run call (run-call.ts). */
interface KeyedCall {
  project: string;
  app: string;
  /** Moved to the key's shard by `keyOfCall`. */
  runId: string;
  idempotencyKey: string | undefined;
}

/** How long a key is remembered. */
export const KEY_TTL_MS = 24 * 60 * 60_000;
/** The largest sync answer kept for replays; a larger one is streamed but not kept. */
const MAX_KEPT_BYTES = 10 * 1024 * 1024;
/** Headers of an answer that are not kept: framing, and the id stamped on every answer. */
const NOT_KEPT = new Set(["content-length", "transfer-encoding", "connection", "set-cookie"]);

/**
 * The key of the request, if it has one: a Structured Fields string (`"…"`, as the draft
 * writes it) or the bare key without a comma; 1–255 printable ASCII characters. 400 otherwise.
 */
export function keyOfHeader(raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  let key = raw;
  if (raw.startsWith('"')) {
    const quoted = /^"((?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\["\\])*)"$/.exec(raw);
    if (!quoted)
      throw invalid(
        'it must be one quoted string (one header line), escaping nothing but \\" and \\\\',
      );
    key = (quoted[1] as string).replace(/\\(["\\])/g, "$1");
  } else if (raw.includes(",")) {
    // Two header lines reach the Worker joined by ", ": which key was meant is not known.
    throw invalid('a bare key may not hold ",": send one header line, or quote the key');
  }
  if (key.length === 0 || key.length > 255)
    throw invalid(`it must be 1 to 255 characters, got ${key.length}`);
  if (!/^[\x20-\x7e]+$/.test(key)) throw invalid("it may hold printable ASCII characters only");
  return key;
}

function invalid(why: string): RunApiError {
  return new RunApiError(400, `${HEADER.idempotencyKey} is not valid: ${why}`);
}

/**
 * The call's key hashed with its scope, and its request's fingerprint (method, path with query,
 * body). The call's run id moves to the shard the key's hash picks, where the key is kept.
 */
export async function keyOfCall(
  c: Context<WorkerEnv>,
  call: KeyedCall,
  fn: string,
  body: ArrayBuffer,
): Promise<IdempotencyKey | undefined> {
  if (call.idempotencyKey === undefined) return undefined;
  const url = new URL(c.req.url);
  // The app's id, not only its name: an app deleted and deployed again under the same name is
  // another app, and its calls must not replay the first one's answers.
  const scope = `${call.project}\n${call.app}\n${c.var.app.id}\n${fn}`;
  const hash = await sha256Hex(utf8(`${scope}\n${call.idempotencyKey}`));
  // Its query's parameters by name (a client that builds a query from a map sends them in any
  // order: the same request was a 422), each name's values in their order.
  url.searchParams.sort();
  const head = utf8(`${c.req.method}\n${url.pathname}${url.search}\n`);
  const fingerprint = await sha256Hex(concatBytes([head, new Uint8Array(body)]));
  call.runId = newRunIdIn(Number.parseInt(hash.slice(0, 8), 16));
  c.set("runId", call.runId);
  // Held while the call may last: a start of up to 30 min comes before it (worker/host.ts).
  const leaseMs = Math.max(SYNC_LEASE_MS, longestHostAnswerMs(c.var.app.startTimeout) + 60_000);
  return { hash, fingerprint, ttlMs: KEY_TTL_MS, leaseMs };
}

/** The answer of a key seen before: its first run's, marked replayed. */
export function replayed(c: Context<WorkerEnv>, claim: KeyClaim): Response {
  const { replayOf, answer } = viewOrThrow(claim);
  c.set("runId", replayOf);
  const res = answer
    ? new Response(answer.body, { status: answer.status, headers: answer.headers })
    : c.json({ run_id: replayOf }, 202);
  res.headers.set(HEADER.idempotentReplayed, "true");
  return res;
}

/** The host's refusals of a call that ran nothing (bad input, no such function, no slot). */
const NOTHING_RAN: ReadonlySet<number> = new Set([400, 404, 413, 429]);

/**
 * A sync call with a key: its first run answers (`run`) and the answer is kept for the key's
 * replays; a replay answers at once. A call the host refused before running anything frees the
 * key: a retry runs. Any other failure (a timeout, a host cut off or not reached) may come after
 * the function ran: it is the answer the key keeps, so a retry never runs it twice.
 */
export async function answeredOnce(
  c: Context<WorkerEnv>,
  call: KeyedCall,
  key: IdempotencyKey | undefined,
  run: () => Promise<Response>,
): Promise<Response> {
  if (!key) return run();
  const shard = shardFor(c.env, call.project, call.app, call.runId);
  const runId = call.runId;
  let claim = await shard.claim(key, runId);
  if (claim && "pending" in claim) {
    await noKeptAnswer(c, call.project, claim);
    claim = await shard.claim(key, runId, true); // lapsed, and its run left no trace: runs now
    if (claim && "pending" in claim) throw keyRunRefusal(claim.pending);
  }
  if (claim) return replayed(c, claim);
  let res: Response;
  try {
    res = await run();
  } catch (err) {
    if (err instanceof RunApiError && NOTHING_RAN.has(err.status)) {
      c.executionCtx.waitUntil(shard.release(key.hash, runId));
      throw err;
    }
    res = renderError(err as Error, c);
  }
  const headers: Record<string, string> = {};
  for (const [name, value] of res.headers)
    if (!NOT_KEPT.has(name) && name !== HEADER.requestId.toLowerCase()) headers[name] = value;
  const keep = (body: ArrayBuffer | null) =>
    shard.keep(key.hash, runId, { status: res.status, headers, body } satisfies KeptAnswer);
  if (!res.body) {
    await keep(new ArrayBuffer(0));
    return res;
  }
  const [toCaller, toKeep] = res.body.tee();
  const kept = readCapped(toKeep, MAX_KEPT_BYTES)
    .then(
      (body) => keep(body ?? null),
      () => keep(null), // cut off midway: the run is over, its answer not kept whole
    )
    .catch((err) => console.error(`[worker] the answer of ${runId} could not be kept:`, err));
  // A function's answer is whole already: kept before it leaves, so a retry finds it. A custom
  // app's streams on, and is kept as it passes.
  if (c.var.app.runtime === "custom") c.executionCtx.waitUntil(kept);
  else await kept;
  return new Response(toCaller, res);
}

/** How long after its run's end in the runs index a key's answer is taken for lost. */
const ANSWER_LOST_MS = 60_000;

/**
 * A key whose sync run's answer is not kept: refused (409) unless its lease lapsed and the runs
 * index has no trace of its run (it never reached a host). A run the index has ended a minute
 * ago or more ran, and its answer was lost with the Worker that held the call: read it instead.
 * Before, such a key said "has not answered yet" for its whole lease (10 min), then ran the job
 * again (the operator's exploratory round: a stack killed mid-call, its host finishing the call).
 * A run the index has ended less than a minute ago is said to have ended too (its answer may
 * still be kept by the call that ran it): it was "has not answered yet: try again once it has",
 * which `runlet status` of the run, ended, gainsaid (the Worker killed mid-call, by hand).
 */
async function noKeptAnswer(c: Context<WorkerEnv>, project: string, key: PendingKey) {
  const run = await indexedRun(c.env, c.var.caller.token, project, key.pending).catch(
    () => undefined, // the control plane not reachable: as if it had no trace
  );
  const ended = run?.finished_at ? Date.parse(run.finished_at) : undefined;
  const endedAs = `the run of this Idempotency-Key (${key.pending}) ended ${run?.status} at ${run?.finished_at}`;
  const readIt = `read the run instead (GET …/runs/${key.pending}); the key does not run it again`;
  if (ended !== undefined && ended <= Date.now() - ANSWER_LOST_MS)
    throw keyRunRefusal(
      key.pending,
      `${endedAs}, but its answer was not kept (the call was cut off where Runlet answers it): ${readIt}`,
    );
  if (ended !== undefined)
    throw keyRunRefusal(
      key.pending,
      `${endedAs}; its answer is not kept yet: it is on its way to the first call's caller (send the key again in a moment for it), or it was lost with a Worker that stopped mid-call: ${readIt}`,
    );
  if (run || !key.lapsed) throw keyRunRefusal(key.pending);
}

/** A 409 about the key's run `runId` (by default: it has not answered yet), naming it as run_id. */
function keyRunRefusal(runId: string, message = stillRunning(runId)): RunApiError {
  const err = new RunApiError(409, message);
  err.runId = runId;
  return err;
}

function utf8(text: string): Uint8Array {
  return new TextEncoder().encode(text);
}
