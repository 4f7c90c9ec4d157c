/**
 * `/v4/{project}/{app}/…`: who calls (the JWT, verified at the edge) and the app they call (the
 * control plane's answer), into `c.var.caller` and `c.var.app` before any route runs: 401, 403
 * and 404 come from here, the same for every run route. One exception: a read of a run
 * (`GET …/runs/{run_id}`) whose app was deleted goes on to its route with `c.var.appGone`, as
 * the app's runs outlive it (the route asks the runs index whether the caller may read it).
 */
import { createMiddleware } from "hono/factory";
import { resolveApp, verifyCaller } from "../auth.ts";
import type { WorkerEnv } from "../env.ts";
import { RunApiError } from "../errors.ts";
import { RUN_STATE } from "./run-id.ts";

export const caller = createMiddleware<WorkerEnv>(async (c, next) => {
  const project = c.req.param("project") as string;
  const app = c.req.param("app") as string;
  const who = await verifyCaller(c.env, c.req.header("authorization"));
  c.set("caller", who);
  try {
    c.set("app", await resolveApp(c.env, who, project, app));
  } catch (err) {
    const readsRun = c.req.method === "GET" && RUN_STATE.test(c.req.path);
    if (!(readsRun && err instanceof RunApiError && err.status === 404)) throw err;
    c.set("appGone", err.message);
  }
  await next();
});
