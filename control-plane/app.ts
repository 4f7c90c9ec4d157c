import { OpenAPIHono, type RouteConfig, z } from "@hono/zod-openapi";
import { HEADER } from "../common/consts.ts";
import { newId } from "../common/ids.ts";
import { refuseUnrouted } from "./allowed-methods.ts";
import { recordFailures } from "./audit/record.ts";
import type { AppEnv, Deps } from "./context.ts";
import { registerDashboard } from "./dashboard/index.tsx";
import { viaDashboard } from "./dashboard/via.ts";
import { handleError } from "./errors.ts";
import { validationHook } from "./openapi.ts";
import { registerDeployApp } from "./routes/apps-deploy.ts";
import { registerGetAppOutput } from "./routes/apps-output.ts";
import { registerReadApps } from "./routes/apps-read.ts";
import { registerGetAppReplicas } from "./routes/apps-replicas.ts";
import { registerListAppVersions } from "./routes/apps-versions.ts";
import { registerExportAuditLog } from "./routes/audit-log-export.ts";
import { registerListAuditLogs } from "./routes/audit-log-list.ts";
import { registerDashboardLinks } from "./routes/dashboard-links.ts";
import { registerHosts } from "./routes/hosts.ts";
import { registerHostsDrain } from "./routes/hosts-drain.ts";
import { registerInit } from "./routes/init.ts";
import { registerInternalApps } from "./routes/internal-apps.ts";
import { registerInternalHosts } from "./routes/internal-hosts.ts";
import { registerInternalRuns } from "./routes/internal-runs.ts";
import { registerJwks } from "./routes/jwks.ts";
import { registerKeys } from "./routes/keys.ts";
import { registerCreateProject } from "./routes/projects-create.ts";
import { registerDeleteProject } from "./routes/projects-delete.ts";
import { registerGetProject } from "./routes/projects-get.ts";
import { registerListProjects } from "./routes/projects-list.ts";
import { registerUpdateProject } from "./routes/projects-update.ts";
import { registerGetRun, registerListRuns } from "./routes/runs-list.ts";
import { registerGetRunLogs } from "./routes/runs-logs.ts";
import { registerSecrets } from "./routes/secrets.ts";
import { registerServiceAccounts } from "./routes/service-accounts.ts";
import { registerUsers } from "./routes/users.ts";
import { registerProjectUsers } from "./routes/users-members.ts";
import { registerUserTokens } from "./routes/users-tokens.ts";

export type ControlPlaneApp = OpenAPIHono<AppEnv>;

/** A route's query when it declares none: any parameter is refused, as unknown JSON fields are. */
const NO_QUERY = z.strictObject({});

/**
 * Query parameters a route does not declare are refused with 400 (docs/api.md): every route
 * registered on `app` without a query schema gets the empty one.
 */
function refuseUndeclaredQueries(app: ControlPlaneApp): void {
  const register = app.openapi.bind(app);
  app.openapi = ((route: RouteConfig, ...rest: unknown[]) =>
    (register as (...args: unknown[]) => unknown)(
      route.request?.query ? route : { ...route, request: { ...route.request, query: NO_QUERY } },
      ...rest,
    )) as typeof app.openapi;
}

/** The management API as a Hono app. It is handed its database and collaborators; it opens nothing. */
export function createControlPlane(deps: Deps): ControlPlaneApp {
  const app = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
  refuseUndeclaredQueries(app);
  app.use(async (c, next) => {
    c.set("deps", deps);
    // The dashboard's own request: the browser request's id, which its answer carries.
    c.set("requestId", viaDashboard(c)?.requestId ?? newId("req"));
    c.header(HEADER.requestId, c.var.requestId);
    await next();
  });
  app.use("/v2/*", recordFailures);
  app.onError(handleError);
  app.notFound((c) =>
    c.json({ message: `no route for ${c.req.method} ${c.req.path}`, code: "not_found" }, 404),
  );

  app.get("/healthz", (c) => c.json({ ok: true, component: "control-plane" }));
  // A person who opens {base_url} in a browser: the dashboard (its sign-in page if need be).
  app.get("/", (c) => c.redirect("/dashboard/runs", 303));
  registerJwks(app);
  registerInit(app);
  registerCreateProject(app);
  registerListProjects(app);
  registerGetProject(app);
  registerUpdateProject(app);
  registerDeleteProject(app);
  registerServiceAccounts(app);
  registerUsers(app);
  registerProjectUsers(app);
  registerUserTokens(app);
  registerSecrets(app);
  registerDeployApp(app);
  registerReadApps(app);
  registerListAppVersions(app);
  registerGetAppReplicas(app);
  registerGetAppOutput(app);
  registerListAuditLogs(app);
  registerExportAuditLog(app);
  registerListRuns(app);
  registerGetRun(app);
  registerGetRunLogs(app);
  registerInternalRuns(app);
  registerInternalApps(app);
  registerInternalHosts(app);
  registerHosts(app);
  registerHostsDrain(app);
  registerKeys(app);
  registerDashboardLinks(app);
  registerDashboard(app, (path, init) => app.request(path, init));

  app.openAPIRegistry.registerComponent("securitySchemes", "bearerAuth", {
    type: "http",
    scheme: "bearer",
    bearerFormat: "JWT",
    description: "A user's or a service account's token.",
  });
  app.openAPIRegistry.registerComponent("securitySchemes", "bootstrapToken", {
    type: "http",
    scheme: "bearer",
    description:
      "The control plane's bootstrap token (BOOTSTRAP_TOKEN, RUNLET_BOOTSTRAP_TOKEN): POST /v2/init only.",
  });
  app.doc31("/v2/openapi.json", {
    openapi: "3.1.0",
    info: { title: "Runlet management API", version: "1.0.0" },
  });
  // A path of a route under another method is 405 with `Allow`; any other path 404.
  app.all("/v2/*", (c) => refuseUnrouted(app, c, "no such management API route"));
  return app;
}
