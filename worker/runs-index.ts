/**
 * Reports runs to the control plane's runs index (`PUT /internal/runs/{id}`), off the caller's
 * path: a failed report is logged and never changes a run's answer. The Worker reports here
 * only the sync runs the runtime host failed or never got; the host reports the others, and an
 * async run's shard its acceptance and end (runs/index-reports.ts).
 */
import { controlPlanePath } from "../common/protocol/paths.ts";
import type { RunReport } from "../common/protocol/runs.ts";
import { controlPlaneFetch } from "./control-plane.ts";
import type { Env } from "./env.ts";

export async function reportRun(env: Env, runId: string, report: RunReport): Promise<void> {
  try {
    const res = await controlPlaneFetch(env, controlPlanePath.run(runId), {
      method: "PUT",
      headers: {
        authorization: `Bearer ${env.INTERNAL_TOKEN}`,
        "content-type": "application/json",
      },
      body: JSON.stringify(report),
    });
    if (!res.ok) console.error(`[worker] runs index refused ${runId}: ${res.status}`);
  } catch (err) {
    console.error(`[worker] runs index unreachable for ${runId}: ${(err as Error).message}`);
  }
}
