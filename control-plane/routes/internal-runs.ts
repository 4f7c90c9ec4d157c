import type { OpenAPIHono } from "@hono/zod-openapi";
import { and, eq, inArray, isNull } from "drizzle-orm";
import { RUN_ID } from "../../common/ids.ts";
import {
  type RunReportBatch,
  runReportRowSchema,
  runReportRowsSchema,
  runReportSchema,
} from "../../common/protocol/runs.ts";
import { internalOnly } from "../auth/internal-only.ts";
import type { AppEnv } from "../context.ts";
import { inParts } from "../db/in-parts.ts";
import { projects } from "../db/schema.ts";
import { ApiError } from "../errors.ts";
import { forgetOldRuns, recordRuns } from "../runs/index.ts";
import { jsonBody } from "../validate.ts";

/**
 * `PUT /internal/runs/{runId}`: the Worker reports a run's state for the runs index (an end it
 * reports replaces one the host reported: the run's record decides);
 * `POST /internal/runs` with `{runs: [{id, ...report}]}`: the host's reports, many at once, in
 * one write. Reports of projects that do not exist (any more, or were deleted) are skipped and counted, and so
 * are reports the index cannot take (logged): the others of their batch are recorded. Each
 * batch also removes as many runs past their retention as it may add, so the index holds a
 * week of runs however long the control plane runs.
 */
export function registerInternalRuns(app: OpenAPIHono<AppEnv>) {
  app.post("/internal/runs", internalOnly, async (c) => {
    const rows = (await jsonBody(c, runReportRowsSchema)).runs;
    const runs: RunReportBatch["runs"] = [];
    for (const row of rows) {
      const parsed = runReportRowSchema.safeParse(row);
      if (parsed.success) runs.push(parsed.data);
      else console.error(`runs index: a report refused: ${parsed.error.issues[0]?.message}`);
    }
    const { db } = c.var.deps;
    const named = [...new Set(runs.map((r) => r.projectId))];
    const found = await inParts(named, (part) =>
      db
        .select({ id: projects.id })
        .from(projects)
        .where(and(inArray(projects.id, part), isNull(projects.deletedAt))),
    );
    const known = new Set(found.map((p) => p.id));
    const accepted = runs.filter((r) => known.has(r.projectId));
    const [first, ...rest] = recordRuns(db, accepted);
    if (first) await db.batch([first, ...rest, forgetOldRuns(db, Date.now())]);
    return c.json({ recorded: accepted.length, skipped: rows.length - accepted.length }, 200);
  });

  app.put("/internal/runs/:runId", internalOnly, async (c) => {
    const runId = c.req.param("runId");
    if (!RUN_ID.test(runId)) throw new ApiError("bad_request", "not a run id");
    const report = await jsonBody(c, runReportSchema);
    const { db } = c.var.deps;
    const [project] = await db
      .select({ id: projects.id })
      .from(projects)
      .where(and(eq(projects.id, report.projectId), isNull(projects.deletedAt)));
    if (!project) throw new ApiError("not_found", `project '${report.projectId}' not found`);
    const [first, ...rest] = recordRuns(db, [{ ...report, id: runId }], true);
    await db.batch([first, ...rest]);
    return c.body(null, 204);
  });
}
