/**
 * The runtime host's messages to the Worker and the control plane.
 *
 * - `HostRun`: an async run as the host keeps it. It answers a hand-over (`POST
 *   /internal/async/…`: 202 running, 200 ended, 409 `{message, code, run}` known already),
 *   `GET /internal/runs/{runId}`, `DELETE` on it, and is the body of the callback to the Worker.
 * - `Invocation`: the answer to a synchronous call (`POST /internal/invoke/…`).
 * - `HostMetrics`: `GET /internal/metrics`. `RunLogs`: `GET /internal/runs/{runId}/logs`.
 *
 * The host types what it sends with these; the Worker and the control plane parse what comes
 * (the Worker only a run's state, `HostRunState`: it knows whose run it asked about).
 * zod/mini: the Worker bundles this file.
 */
import * as z from "zod/mini";
import { RUN_STATUSES } from "./runs.ts";

const ms = () => z.number().check(z.nonnegative());
const error = z.object({ message: z.string() });

/** What the host says of a run's state: all the Worker reads of a `HostRun`. */
export const hostRunStateSchema = z.object({
  status: z.enum(RUN_STATUSES),
  /** When it started on a replica; unset while queued (and for a run that ended before). */
  startedAt: z.optional(ms()),
  /** When the run fails unless it has ended: its start + the app's response_grace_period. */
  deadlineAt: z.optional(ms()),
  finishedAt: z.optional(ms()),
  /** A function's return value. */
  result: z.optional(z.unknown()),
  /**
   * A custom app's answer, decoded of its content-encoding: its body as text, or as base64
   * (`body_encoding`) when it is not UTF-8 text; at most 10 MiB.
   */
  http: z.optional(
    z.object({
      status_code: z.number().check(z.int()),
      content_type: z.nullable(z.string()),
      body: z.string(),
      body_encoding: z.optional(z.literal("base64")),
    }),
  ),
  error: z.optional(error),
  runTimeMs: z.optional(ms()),
});
export type HostRunState = z.infer<typeof hostRunStateSchema>;
export type HttpAnswer = NonNullable<HostRunState["http"]>;

/** The host's whole record of an async run: whose it is, what it calls, its state. */
export const hostRunSchema = z.extend(hostRunStateSchema, {
  runId: z.string(),
  project: z.string(),
  app: z.string(),
  fn: z.string(),
});
export type HostRun = z.infer<typeof hostRunSchema>;

/** A hand-over's 409: the host knows a run of that id already, in this state. */
export const knownRunSchema = z.object({ run: hostRunStateSchema });

export const invocationSchema = z.discriminatedUnion("ok", [
  z.object({ ok: z.literal(true), result: z.unknown(), run_time_ms: ms() }),
  z.object({ ok: z.literal(false), error, run_time_ms: ms() }),
]);
export type Invocation = z.infer<typeof invocationSchema>;

export const hostMetricsSchema = z.object({
  apps: z.array(
    z.object({
      project: z.string(),
      app: z.string(),
      version: z.number(),
      /** Calls waiting for a replica slot. */
      queued: z.number(),
      /** Replicas granted (docs/hosts.md) or being asked for, not started yet. */
      reserved: z.optional(z.number()),
      replicas: z.array(
        z.object({ pid: z.nullable(z.number()), ready: z.boolean(), active: z.number() }),
      ),
      /**
       * Replicas a deploy's start check started and holds for the version's first call: ready,
       * idle, and not in `replicas` (nor in the heartbeat's counts) until that call claims one.
       */
      held: z.optional(z.number()),
    }),
  ),
  /** The pids of the spare processes waiting for an app, per runtime. */
  spares: z.object({ managed: z.array(z.number()), custom: z.array(z.number()) }),
});
export type HostMetrics = z.infer<typeof hostMetricsSchema>;

/**
 * One app's part of a host, as its heartbeat says it and `GET …/apps/{app}/replicas` shows it:
 * its replicas (those granted and not started yet included) and the calls they are busy with.
 */
export function appLoad(app: HostMetrics["apps"][number]): { replicas: number; busy: number } {
  return {
    replicas: app.replicas.length + (app.reserved ?? 0),
    busy: app.replicas.reduce((n, r) => n + r.active, 0),
  };
}

export const runLogsSchema = z.object({
  runId: z.string(),
  lines: z.array(
    z.object({
      /** RFC 3339, when the line's first character was written. */
      time: z.string(),
      stream: z.enum(["stdout", "stderr"]),
      /** The line without its newline. */
      text: z.string(),
      /**
       * A whole line's number in all the run wrote, from 1 (dropped lines counted); none on an
       * unfinished last line, which comes again once it ends. `?after=N` asks for those past N.
       */
      seq: z.optional(z.number()),
    }),
  ),
  /** Older lines (or the start of a very long line) were dropped to stay within the limit. */
  truncated: z.boolean(),
});
export type RunLogs = z.infer<typeof runLogsSchema>;

/** `GET /internal/apps/{project}/{app}/output`: everything the app's replicas wrote, as a container log. */
export const replicaOutputSchema = z.object({
  replicas: z.array(
    z.object({
      pid: z.nullable(z.number()),
      version: z.number(),
      /** Running; stopping (its last calls, then it ends); exited (one of the last few). */
      state: z.enum(["running", "stopping", "exited"]),
      startedAt: z.string(),
      endedAt: z.nullable(z.string()),
      /**
       * How its process ended, once `exited`: its exit code, or the signal that ended it (null
       * from a host older than the field).
       */
      exit: z._default(
        z.nullable(z.object({ code: z.nullable(z.number()), signal: z.nullable(z.string()) })),
        null,
      ),
      /** Bytes written but no longer kept: a replica keeps its newest 256 KiB. */
      dropped: z.number(),
      lines: runLogsSchema.shape.lines,
    }),
  ),
});
export type ReplicaOutput = z.infer<typeof replicaOutputSchema>;

/** `GET /v2/projects/{id}/apps/{app}/output`: every host's replicas of the app, with their host. */
export interface AppOutput {
  replicas: Array<ReplicaOutput["replicas"][number] & { host: string }>;
  /** Hosts that did not answer: their replicas are not in the list. */
  unreachable: number;
}
