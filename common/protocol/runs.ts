/**
 * What every component says of a run: its statuses, its id, and the report the runs index takes
 * (`POST /internal/runs` with many, `PUT /internal/runs/{runId}` with one). The Worker's shards
 * and the runtime host send reports (typed by `RunReport`); the control plane validates them.
 * zod/mini: the Worker bundles this file.
 */
import * as z from "zod/mini";
import { RUN_ID } from "../ids.ts";

/**
 * `queued`: accepted, waiting for a replica slot; `running`: on a replica; then one of the ends,
 * which a run never leaves.
 */
export const RUN_STATUSES = ["queued", "running", "success", "failure", "cancelled"] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

/**
 * The statuses other platforms name otherwise (Replicate's `succeeded`/`failed`/`canceled`,
 * RunPod's `COMPLETED`/`IN_QUEUE`/`IN_PROGRESS`, Modal's...), by the status meant: a filter that
 * names one is refused with ours suggested (common/closest.ts).
 */
export const RUN_STATUS_ALIASES: Readonly<Record<string, RunStatus>> = {
  pending: "queued",
  waiting: "queued",
  in_queue: "queued",
  starting: "queued",
  started: "running",
  processing: "running",
  in_progress: "running",
  succeeded: "success",
  successful: "success",
  completed: "success",
  done: "success",
  ok: "success",
  failed: "failure",
  error: "failure",
  errored: "failure",
  timed_out: "failure",
  timeout: "failure",
  canceled: "cancelled",
  aborted: "cancelled",
};

export const ENDED_STATUSES = ["success", "failure", "cancelled"] as const;
export type EndedStatus = (typeof ENDED_STATUSES)[number];

export function isEnded(status: string): status is EndedStatus {
  return (ENDED_STATUSES as readonly string[]).includes(status);
}

/**
 * A custom app's request, which the runs index keeps as `{METHOD} {path}` (worker/routes/
 * app-request.ts) where a managed app's run has its function's name: its output is its
 * replica's, not a run's log.
 */
export function isCustomRequest(fn: string): boolean {
  return /^[A-Z]+ \//.test(fn);
}

/**
 * A function result's own `status_code` (an integer from 200 to 599): the HTTP status of its
 * sync run, and what the runs index keeps of it; undefined where the result sets none (200).
 */
export function ownStatusCode(result: unknown): number | undefined {
  if (!result || typeof result !== "object" || !("status_code" in result)) return undefined;
  const code = (result as { status_code: unknown }).status_code;
  return typeof code === "number" && Number.isInteger(code) && code >= 200 && code <= 599
    ? code
    : undefined;
}

/**
 * What a run's status says of an answer outside 2xx, a custom app's or a function's own
 * `status_code` (its run is a success: the app answered): " (answered 404)", or nothing. A 404
 * shown as a plain `success` read as if the call had worked.
 */
export function answeredNote(statusCode: number | undefined): string {
  return statusCode === undefined || (statusCode >= 200 && statusCode < 300)
    ? ""
    : ` (answered ${statusCode})`;
}

/**
 * How long a run is kept once it ended: its row in the run store (once its delivery is over
 * too), its entry in the runs index.
 */
export const RUN_RETENTION_MS = 7 * 24 * 60 * 60_000;

/**
 * A run's webhook delivery: under way, then how it ended — or `cancelled`: the run was cancelled
 * before it ended, and nothing was sent.
 */
export const WEBHOOK_STATES = ["pending", "delivered", "failed", "cancelled"] as const;
export type WebhookState = (typeof WEBHOOK_STATES)[number];

export const runIdSchema = z.string().check(z.regex(RUN_ID, "not a run id"));

const ms = () => z.number().check(z.int(), z.nonnegative());

/** The longest `function` the index keeps: a longer one (a custom app's long path) is cut. */
export const FUNCTION_NAME_MAX = 256;

const ERROR_MAX = 1000;

export const runReportSchema = z.strictObject({
  projectId: z.string().check(z.minLength(1), z.maxLength(64)),
  app: z.string().check(z.minLength(1), z.maxLength(64)),
  /**
   * A function's name, or a custom app's request as `METHOD /path` (never its query); one
   * longer than `FUNCTION_NAME_MAX` (a long path) is kept cut, ending in "…".
   */
  function: z.pipe(
    z.string().check(z.minLength(1)),
    z.transform((name) =>
      name.length > FUNCTION_NAME_MAX ? `${name.slice(0, FUNCTION_NAME_MAX - 1)}…` : name,
    ),
  ),
  async: z.boolean(),
  status: z.enum(RUN_STATUSES),
  createdAt: ms(),
  finishedAt: z.optional(z.nullable(ms())),
  runTimeMs: z.optional(z.nullable(z.number().check(z.nonnegative()))),
  /** A failed run's message, as its caller got it; a longer one is kept cut at 1,000. */
  error: z.optional(
    z.nullable(
      z.pipe(
        z.string(),
        z.transform((m) => (m.length > ERROR_MAX ? `${m.slice(0, ERROR_MAX - 1)}…` : m)),
      ),
    ),
  ),
  /** How a custom app answered its run, or a function's own `status_code`: its HTTP status. */
  statusCode: z.optional(z.nullable(z.number().check(z.int(), z.gte(100), z.lte(599)))),
  /** The registry id of the runtime host that ran it, when known (docs/hosts.md). */
  host: z.optional(z.string().check(z.minLength(1), z.maxLength(64))),
  /** The run's webhook delivery, from its shard: pending, then how it ended. */
  webhook: z.optional(
    z.strictObject({
      state: z.enum(WEBHOOK_STATES),
      attempts: z.number().check(z.int(), z.minimum(0), z.maximum(100)),
    }),
  ),
});
export type RunReport = z.infer<typeof runReportSchema>;

/** One report of a batch, naming its run. */
export const runReportRowSchema = z.extend(runReportSchema, { id: runIdSchema });

/** Many reports at once, each naming its run: what a shard or the host gathered. */
export const runReportBatchSchema = z.strictObject({
  runs: z.array(runReportRowSchema).check(z.minLength(1), z.maxLength(500)),
});
export type RunReportBatch = z.infer<typeof runReportBatchSchema>;

/**
 * A batch as the runs index reads it: each report checked on its own, so that one it cannot
 * take does not cost the others their place in the index.
 */
export const runReportRowsSchema = z.strictObject({
  runs: z.array(z.unknown()).check(z.minLength(1), z.maxLength(500)),
});
