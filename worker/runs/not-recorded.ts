/**
 * An async run its shard could not record (docs/reliability.md, "A full disk"). The shard
 * answers `accept` only once the run and its idempotency key are written, both in one
 * transaction: when the write fails, workerd rolls it back and resets the object, and the
 * error reaches the route instead of the answer. So the run was not accepted, and the caller is
 * told so, with what the Worker can tell of why:
 *
 * - the shard's own write refused for want of room: workerd passes SQLite's words on,
 *   `database or disk is full: SQLITE_FULL` (the object's storage full on Cloudflare, the disk
 *   under wrangler's state locally): 507;
 * - storage that failed below the object's code (a shard that cannot open its database on a full
 *   disk: workerd logs the SQLite error and gives the Worker only `internal error; reference =
 *   …`): 503, without a cause the Worker cannot know;
 * - the link to the shard lost (`retryable` without a reset): the shard may have recorded the run
 *   before the answer was lost, and the 503 says so.
 */
import { RunApiError } from "../errors.ts";

/** What workerd sets on an error thrown across a Durable Object's RPC. */
interface RpcError {
  message?: unknown;
  retryable?: unknown;
  durableObjectReset?: unknown;
}

const AGAIN =
  "submit it again (with an Idempotency-Key, a run already recorded is answered, not run twice)";

export function notRecorded(err: unknown, runId: string): RunApiError {
  const e = (err ?? {}) as RpcError;
  const said = typeof e.message === "string" ? e.message : String(err);
  console.error(`[worker] run ${runId}: the run store could not record it:`, said);
  if (/\bSQLITE_FULL\b/.test(said)) {
    return new RunApiError(
      507,
      "the run was not accepted: the run store is full (database or disk is full), so it could not record the run; free space where the Worker keeps its state (RUNLET_HOME locally), then submit it again",
    );
  }
  if (e.retryable === true && e.durableObjectReset !== true) {
    return new RunApiError(
      503,
      `the run store did not answer (${said}), so the run may not have been accepted: ${AGAIN}`,
    );
  }
  return new RunApiError(
    503,
    `the run was not accepted: the run store could not record the run (${said}); try again shortly, and if it persists, look at the Worker's log`,
  );
}
