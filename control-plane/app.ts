import { Hono } from "hono";
import type { AppEnv, Deps } from "./context.ts";
import { ApiError, handleError } from "./errors.ts";
import { registerDeployApp } from "./routes/apps-deploy.ts";
import { registerReadApps } from "./routes/apps-read.ts";
import { registerJwks } from "./routes/jwks.ts";

/** The management API as a Hono app. It is handed its database and collaborators; it opens nothing. */
export function createControlPlane(deps: Deps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.use(async (c, next) => {
    c.set("deps", deps);
    await next();
  });
  app.onError(handleError);
  app.notFound((c) =>
    c.json({ message: `no route for ${c.req.method} ${c.req.path}`, code: "not_found" }, 404),
  );

  app.get("/healthz", (c) => c.json({ ok: true, component: "control-plane" }));
  registerJwks(app);
  registerDeployApp(app);
  registerReadApps(app);
  app.all("/v2/*", () => {
    throw new ApiError("not_found", "no such management API route");
  });
  return app;
}
