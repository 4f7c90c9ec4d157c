/**
 * The logs of a run as `GET …/runs/{runId}/logs` answers: the runtime host's own answer
 * (`RunLogs`, common/protocol/host.ts), passed on, described for the OpenAPI document.
 */
import { z } from "@hono/zod-openapi";
import type { RunLogs } from "../../common/protocol/host.ts";

export const runLogLineSchema = z
  .object({
    time: z.string().openapi({ format: "date-time", description: "When the line was written." }),
    stream: z.enum(["stdout", "stderr"]),
    text: z.string().openapi({ description: "The line, without its newline." }),
    seq: z.number().int().optional().openapi({
      description:
        "The line's number in all the run wrote, from 1 (dropped lines counted); none on an unfinished last line (no newline yet), which comes again, whole, once it ends.",
    }),
  })
  .openapi("RunLogLine");

export const runLogsSchema = z
  .object({
    runId: z.string(),
    lines: z.array(runLogLineSchema),
    truncated: z
      .boolean()
      .openapi({ description: "Older lines were dropped: a run keeps its newest 64 KiB." }),
  })
  .openapi("RunLogs") satisfies z.ZodType<RunLogs>;
