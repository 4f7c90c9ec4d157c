import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import { RUN_ID } from "../../common/ids.ts";
import { isCustomRequest } from "../../common/protocol/runs.ts";
import { access } from "../auth/access.ts";
import type { AppEnv } from "../context.ts";
import type { runs } from "../db/schema.ts";
import { ApiError } from "../errors.ts";
import { bearerAuth, errorResponses, projectIdParam } from "../openapi.ts";
import { findRun } from "../runs/index.ts";
import { runLogsSchema } from "../runs/logs.ts";

export const runLogsParams = projectIdParam.extend({
  runId: z
    .string()
    // What one is, as the run API says it: "not a run id" alone left a mistyped or cut id a riddle.
    .regex(RUN_ID, "not a run id: a run id is 'run_' and 26 lowercase letters and digits")
    .openapi({ param: { name: "runId", in: "path" }, example: "run_…" }),
});

const afterMessage = "must be a whole number, 0 or more: the seq of the last line read";

/**
 * Members and owners, like the runs list. Not audited: it reads the output of the caller's own
 * project's code, as the runs list reads its runs (docs/api.md).
 */
export const getRunLogsRoute = createRoute({
  method: "get",
  path: "/v2/projects/{projectId}/runs/{runId}/logs",
  operationId: "getRunLogs",
  summary: "What a run wrote while it ran, line by line (members and owners).",
  security: bearerAuth,
  middleware: [access({ role: "member" })] as const,
  request: {
    params: runLogsParams,
    query: z.object({
      // Digits only, as `limit` takes: coerced, `abc` read "must be a number, not a NaN", and
      // `0x10` or `1e3` were taken as 16 and 1000.
      after: z
        .string()
        .regex(/^(0|[1-9][0-9]{0,15})$/, afterMessage)
        .transform(Number)
        .refine((n) => n <= Number.MAX_SAFE_INTEGER, afterMessage)
        .optional()
        .openapi({
          type: "string",
          description:
            "Only the whole lines whose `seq` is past this one (and an unfinished last line): what a reader polling the log has not had yet.",
          example: "42",
        }),
    }),
  },
  responses: {
    200: {
      description: "The run's lines, oldest first.",
      content: { "application/json": { schema: runLogsSchema } },
    },
    ...errorResponses({
      404: "The project does not exist, the run is not one of its runs, or no logs of it are kept.",
      502: "The runtime host is not reachable, or could not answer.",
    }),
  },
});

/**
 * Why the runtime hosts keep no logs of `run`: it has not run (or never will), it is a custom
 * app's, it failed before a run time, or it is too old.
 */
function whyNoLogs(run: typeof runs.$inferSelect): string {
  if (run.status === "queued") return "it has not started yet (queued)";
  if (run.host === null && run.runTimeMs === null && run.finishedAt !== null)
    return `it ended (${run.status}) without running on a runtime host`;
  // Where its output is, as for a failure without a run time below: the message alone named no
  // way to it, in the CLI or on the dashboard's run page.
  if (isCustomRequest(run.fn))
    return `a custom app's request writes to its replica's output, not to a run's log: it is in \`runlet logs --app ${run.app}\``;
  if (run.status === "failure" && run.runTimeMs === null) {
    // Its app failed to start, was deleted, or its host lost it: the output is the replica's
    // (a crash at import is there), not the run's.
    const error = run.error ? ` (${run.error})` : "";
    return `it failed on its runtime host without a run time${error}; what the app's replicas wrote is in \`runlet logs --app ${run.app}\``;
  }
  return "the runtime hosts keep the logs of their latest 500 runs of managed-runtime apps only (at most 128 MiB each, on its disk, across its restarts): a run that wrote nothing keeps no file there, so once its host has restarted it is not known from one whose logs were dropped for later runs; or the host that ran it is down or gone";
}

export function registerGetRunLogs(app: OpenAPIHono<AppEnv>) {
  app.openapi(getRunLogsRoute, async (c) => {
    const { db, hosts } = c.var.deps;
    const { projectId } = c.var.access;
    const { runId } = c.req.valid("param");
    const { after } = c.req.valid("query");
    const run = await findRun(db, projectId, runId);
    if (!run) {
      throw new ApiError("not_found", `run '${runId}' not found in project '${projectId}'`);
    }
    const logs = await hosts.runLogs({ project: projectId, runId, after });
    if (!logs) throw new ApiError("not_found", `no logs of run '${runId}': ${whyNoLogs(run)}`);
    return c.json(logs, 200);
  });
}
