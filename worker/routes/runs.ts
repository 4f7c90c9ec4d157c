/**
 * A run's state: `GET /v4/{project}/{app}/runs/{run_id}` (any run: from its shard of the run
 * store when it has a row there — async runs and runs with a webhook — else from the runs
 * index), `DELETE` cancels an async run. And the internal routes: the runtime host's report of
 * an async run's end, and the wake-up of every shard after a restart.
 */
import type { Context, Hono } from "hono";
import { createMiddleware } from "hono/factory";
import { HEADER } from "../../common/consts.ts";
import { sameSecret } from "../../common/same-secret.ts";
import { resolveApp, verifyCaller } from "../auth.ts";
import type { Env, WorkerEnv } from "../env.ts";
import { errorResponse, RunApiError } from "../errors.ts";
import { viewOrThrow } from "../runs/refusal.ts";
import { existingShardFor, shardsOf } from "../runs/shards.ts";
import type { HostRun } from "../runs/types.ts";

/** Run ids as `newId("run")` makes them; other `runs/…` paths stay a custom app's own. */
export const RUN_ID = "run_[0-9a-z]{26}";

export function registerRuns(app: Hono<WorkerEnv>) {
  app.get(`/v4/:project/:app/runs/:runId{${RUN_ID}}`, (c) => withRun(c, "view"));
  app.delete(`/v4/:project/:app/runs/:runId{${RUN_ID}}`, (c) => withRun(c, "cancel"));
  app.post(
    `/internal/apps/:project/:app/runs/:runId{${RUN_ID}}/complete`,
    internalOnly,
    hostReport,
  );
  app.post("/internal/wake", internalOnly, wake);
}

async function withRun(c: Context<WorkerEnv>, action: "view" | "cancel") {
  const { project, app, runId } = c.req.param() as Record<"project" | "app" | "runId", string>;
  try {
    const caller = await verifyCaller(c.env, c.req.header("authorization"));
    await resolveApp(c.env, caller, project, app);
    const shard = existingShardFor(c.env, project, app, runId);
    // Reading an unknown id writes nothing; the shard holds only its app's runs.
    const found = (await shard?.view(runId)) ?? null;
    const notFound = new RunApiError(
      404,
      `no run '${runId}' of app '${app}' in project '${project}'`,
    );
    if (found && (found.app !== app || found.project !== project)) throw notFound;
    if (action === "cancel") {
      if (!shard || !found) {
        const indexed = await indexedRun(c.env, caller.token, project, runId);
        if (!indexed || indexed.app !== app) throw notFound;
        // An async run no longer in its shard ended more than the retention period ago.
        throw new RunApiError(
          409,
          indexed.async
            ? `run '${runId}' has already ended: ${indexed.status}`
            : "only async runs can be cancelled",
        );
      }
      c.header(HEADER.requestId, runId);
      const cancelled = await shard.cancel(runId);
      if (!cancelled) throw notFound;
      return c.json(viewOrThrow(cancelled), 200);
    }
    const view = found ?? (await indexedRun(c.env, caller.token, project, runId));
    if (!view || view.app !== app) throw notFound;
    c.header(HEADER.requestId, runId);
    return c.json(view, 200);
  } catch (err) {
    return errorResponse(c, err, runId);
  }
}

/** A run without a row in the run store (a sync run without a webhook), from the runs index. */
async function indexedRun(env: Env, token: string, project: string, runId: string) {
  let res: Response;
  try {
    res = await fetch(`${env.CONTROL_PLANE_URL}/v2/projects/${project}/runs/${runId}`, {
      headers: { authorization: `Bearer ${token}` },
    });
  } catch {
    throw new RunApiError(502, "the control plane is not reachable");
  }
  if (res.status === 404) return undefined;
  if (!res.ok) throw new RunApiError(502, `the control plane answered ${res.status}`);
  const row = (await res.json()) as {
    id: string;
    app: string;
    function: string;
    async: boolean;
    status: string;
    createdAt: string;
    finishedAt: string | null;
    runTimeMs: number | null;
  };
  return {
    run_id: row.id,
    project,
    app: row.app,
    function: row.function,
    async: row.async,
    status: row.status,
    created_at: row.createdAt,
    started_at: row.createdAt,
    finished_at: row.finishedAt,
    run_time_ms: row.runTimeMs,
  };
}

/** `/internal/*`: only with the internal token, as the runtime host and `runlet start` send it. */
const internalOnly = createMiddleware<WorkerEnv>(async (c, next) => {
  const given = /^Bearer (.+)$/.exec(c.req.header("authorization") ?? "")?.[1] ?? "";
  if (!(await sameSecret(given, c.env.INTERNAL_TOKEN)))
    return c.json({ message: "internal route: invalid token" }, 401);
  await next();
});

async function hostReport(c: Context<WorkerEnv>) {
  let report: HostRun;
  try {
    report = (await c.req.json()) as HostRun;
  } catch {
    return c.json({ message: "the body must be the host's run as JSON" }, 400);
  }
  const { project, app, runId } = c.req.param() as Record<"project" | "app" | "runId", string>;
  const run = await existingShardFor(c.env, project, app, runId)?.report(runId, report);
  if (!run) return c.json({ message: "no such run" }, 404);
  return c.json(run, 200);
}

/**
 * `POST /internal/wake`: wakes every shard of every app once the stack (re)started, so queued
 * runs are handed over and running ones are checked without waiting for a request. Cloudflare
 * keeps a Durable Object's alarm across restarts; the local runtime does not (measured: an
 * alarm set before a SIGKILL never fired after the restart), and `runlet start` calls this.
 */
async function wake(c: Context<WorkerEnv>) {
  let res: Response;
  try {
    res = await fetch(`${c.env.CONTROL_PLANE_URL}/internal/apps`, {
      headers: { authorization: `Bearer ${c.env.INTERNAL_TOKEN}` },
    });
  } catch {
    return c.json({ message: "the control plane is not reachable" }, 502);
  }
  if (!res.ok) return c.json({ message: `the control plane answered ${res.status}` }, 502);
  const { apps } = (await res.json()) as { apps: Array<{ project: string; app: string }> };
  const origin = new URL(c.req.url).origin;
  const woken = await Promise.allSettled(
    apps.flatMap(({ project, app }) => shardsOf(c.env, project, app).map((s) => s.wake(origin))),
  );
  const counts = { apps: apps.length, queued: 0, running: 0, failed: 0 };
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
