/**
 * A run's state: `GET /v4/{project}/{app}/runs/{run_id}` (any run: from its Durable Object when
 * it has one — async runs and runs with a webhook — else from the runs index), `DELETE` cancels
 * an async run. And the runtime host's internal report of an async run's end.
 */
import type { Context, Hono } from "hono";
import { HEADER } from "../../common/consts.ts";
import { sameSecret } from "../../common/same-secret.ts";
import { resolveApp, verifyCaller } from "../auth.ts";
import type { Env, WorkerEnv } from "../env.ts";
import { errorResponse, RunApiError } from "../errors.ts";
import { type HostRun, viewOrThrow } from "../run-object.ts";
import { runObject } from "./run.ts";

/** Run ids as `newId("run")` makes them; other `runs/…` paths stay a custom app's own. */
export const RUN_ID = "run_[0-9a-z]{26}";

export function registerRuns(app: Hono<WorkerEnv>) {
  app.get(`/v4/:project/:app/runs/:runId{${RUN_ID}}`, (c) => withRun(c, "view"));
  app.delete(`/v4/:project/:app/runs/:runId{${RUN_ID}}`, (c) => withRun(c, "cancel"));
  app.post(`/internal/runs/:runId{${RUN_ID}}/complete`, hostReport);
}

async function withRun(c: Context<WorkerEnv>, action: "view" | "cancel") {
  const { project, app, runId } = c.req.param() as Record<"project" | "app" | "runId", string>;
  try {
    const caller = await verifyCaller(c.env, c.req.header("authorization"));
    await resolveApp(c.env, caller, project, app);
    const stub = runObject(c.env, runId);
    // A stub answers for any id; a run of another project or app is not found here either.
    const found = await stub.view();
    const notFound = new RunApiError(
      404,
      `no run '${runId}' of app '${app}' in project '${project}'`,
    );
    if (found && (found.app !== app || found.project !== project)) throw notFound;
    if (action === "cancel") {
      if (!found) {
        const indexed = await indexedRun(c.env, caller.token, project, runId);
        if (!indexed || indexed.app !== app) throw notFound;
        throw new RunApiError(409, "only async runs can be cancelled");
      }
      c.header(HEADER.requestId, runId);
      const cancelled = await stub.cancel();
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

/** A run without a Durable Object (a sync run without a webhook), from the runs index. */
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

async function hostReport(c: Context<WorkerEnv>) {
  const given = /^Bearer (.+)$/.exec(c.req.header("authorization") ?? "")?.[1] ?? "";
  if (!(await sameSecret(given, c.env.INTERNAL_TOKEN)))
    return c.json({ message: "internal route: invalid token" }, 401);
  let report: HostRun;
  try {
    report = (await c.req.json()) as HostRun;
  } catch {
    return c.json({ message: "the body must be the host's run as JSON" }, 400);
  }
  const run = await runObject(c.env, c.req.param("runId") as string).complete(report);
  if (!run) return c.json({ message: "no such run" }, 404);
  return c.json({ status: run.status }, 200);
}
