/**
 * The Worker's internal routes (the internal token only): the runtime host's report of an
 * async run, and the wake-up of every shard after a restart.
 */
import type { Context } from "hono";
import { RUN_ID_SOURCE } from "../../common/ids.ts";
import { appListSchema, wakeRequestSchema } from "../../common/protocol/apps.ts";
import { hostRunStateSchema } from "../../common/protocol/host.ts";
import { CONTROL_PLANE_UNREACHABLE, controlPlaneAnswered } from "../../common/protocol/no-run.ts";
import { controlPlanePath } from "../../common/protocol/paths.ts";
import { controlPlaneFetch } from "../control-plane.ts";
import { type WorkerEnv, workerOrigin } from "../env.ts";
import { RunApiError } from "../errors.ts";
import { existingShardFor, shardsOf } from "../runs/shards.ts";

/** The route of `workerPath.runEnd` (common/protocol/paths.ts), its parameters typed. */
export const HOST_REPORT_PATH = `/internal/apps/:project/:app/runs/:runId{${RUN_ID_SOURCE}}/complete`;

export async function hostReport(c: Context<WorkerEnv, typeof HOST_REPORT_PATH>) {
  const report = hostRunStateSchema.safeParse(await c.req.json().catch(() => undefined));
  if (!report.success) throw new RunApiError(400, "the body must be the host's run (HostRun)");
  const { project, app, runId } = c.req.param();
  const run = await existingShardFor(c.env, project, app, runId)?.report(runId, report.data);
  if (!run) throw new RunApiError(404, "no such run");
  return c.json(run, 200);
}

/**
 * `POST /internal/wake`: wakes the shards of every app once the stack (re)started, so queued
 * runs are handed over and running ones are checked without waiting for a request. Cloudflare
 * keeps a Durable Object's alarm across restarts; the local runtime does not (measured: an
 * alarm set before a SIGKILL never fired after the restart), and `runlet start` calls this.
 * With `objects` (the shards that have storage) only those: waking every shard made 4 objects
 * of each app never run async (300 apps: 1,200 objects, 57 MB on disk, 3,600 open files).
 */
export async function wake(c: Context<WorkerEnv>) {
  const text = await c.req.text();
  const asked = wakeRequestSchema.safeParse(text ? safeJson(text) : {});
  if (!asked.success)
    throw new RunApiError(400, "the body must be {objects?: [ids of run shards]}, or none");
  const stored = asked.data.objects && new Set(asked.data.objects);
  let res: Response;
  try {
    res = await controlPlaneFetch(c.env, controlPlanePath.apps, {
      headers: { authorization: `Bearer ${c.env.INTERNAL_TOKEN}` },
    });
  } catch {
    throw new RunApiError(502, CONTROL_PLANE_UNREACHABLE);
  }
  if (!res.ok) throw new RunApiError(502, controlPlaneAnswered(res.status));
  const list = appListSchema.safeParse(await res.json().catch(() => undefined));
  if (!list.success)
    throw new RunApiError(502, "the control plane's answer was not a list of apps");
  const { apps } = list.data;
  const origin = workerOrigin(c.env);
  const shards = apps
    .flatMap(({ project, app }) => shardsOf(c.env, project, app))
    .filter((s) => !stored || stored.has(s.id.toString()));
  const woken = await Promise.allSettled(shards.map((s) => s.wake(origin)));
  const counts = { apps: apps.length, shards: shards.length, queued: 0, running: 0, failed: 0 };
  for (const result of woken) {
    if (result.status === "fulfilled") {
      counts.queued += result.value.queued;
      counts.running += result.value.running;
    } else {
      counts.failed++;
      console.error("[worker] a run shard could not be woken:", result.reason);
    }
  }
  return c.json(counts, counts.failed > 0 ? 500 : 200);
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
