/**
 * `/v4/{project}/{app}/…`: who calls (the JWT, verified at the edge) and the app they call (the
 * control plane's answer), into `c.var.caller` and `c.var.app` before any route runs: 401, 403
 * and 404 come from here, the same for every run route.
 */
import { createMiddleware } from "hono/factory";
import { resolveApp, verifyCaller } from "../auth.ts";
import type { WorkerEnv } from "../env.ts";

export const caller = createMiddleware<WorkerEnv>(async (c, next) => {
  const project = c.req.param("project") as string;
  const app = c.req.param("app") as string;
  const who = await verifyCaller(c.env, c.req.header("authorization"));
  c.set("caller", who);
  c.set("app", await resolveApp(c.env, who, project, app));
  await next();
});
