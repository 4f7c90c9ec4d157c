/**
 * The dashboard, `{base_url}/dashboard/`: server-rendered pages (hono/jsx), one stylesheet and
 * one script, no inline script or style (the Content-Security-Policy forbids both). Every page
 * is a function of what the public APIs answer for the session's token (see api.ts); every
 * state-changing request is a form POST checked for its origin (CSRF) and its session.
 */
import { Hono } from "hono";
import { csrf } from "hono/csrf";
import { HTTPException } from "hono/http-exception";
import { secureHeaders } from "hono/secure-headers";
import type { AppEnv } from "../context.ts";
import { ApiError } from "../errors.ts";
import { apiFor, type DashEnv, type InProcess } from "./api.ts";
import { SCRIPT, STYLESHEET } from "./assets.ts";
import { BarePage } from "./layout.tsx";
import { registerApiKeys } from "./pages/api-keys.tsx";
import { registerAppDelete } from "./pages/app-delete.tsx";
import { registerAppOutput } from "./pages/app-output.tsx";
import { registerAppRollback } from "./pages/app-rollback.tsx";
import { registerApps } from "./pages/apps.tsx";
import { registerAuditLog } from "./pages/audit-log.tsx";
import { registerHosts } from "./pages/hosts.tsx";
import { registerProjectDelete } from "./pages/project-delete.tsx";
import { registerRun } from "./pages/run.tsx";
import { registerRuns } from "./pages/runs.tsx";
import { registerSecrets } from "./pages/secrets.tsx";
import { registerSignIn } from "./pages/sign-in.tsx";
import { hasSessionCookie, sessionOrWhyNot } from "./session.ts";

export function registerDashboard(app: Hono<AppEnv>, inProcess: InProcess) {
  const dash = new Hono<DashEnv>();
  dash.use(
    secureHeaders({
      contentSecurityPolicy: {
        defaultSrc: ["'none'"],
        scriptSrc: ["'self'"],
        styleSrc: ["'self'"],
        imgSrc: ["'self'", "data:"],
        connectSrc: ["'self'"],
        formAction: ["'self'"],
        frameAncestors: ["'none'"],
        baseUri: ["'none'"],
      },
      referrerPolicy: "no-referrer",
    }),
  );
  // A form posted from another origin is refused, session cookie or not.
  dash.use(csrf());
  dash.onError((err, c) => {
    if (err instanceof HTTPException && err.status === 403 && !(err instanceof ApiError)) {
      return c.html(
        <BarePage title="Refused">
          <p>This form was sent from another site, so it was refused.</p>
        </BarePage>,
        403,
      );
    }
    console.error("[dashboard] unexpected error:", err);
    return c.html(
      <BarePage title="Something went wrong">
        <p>The page could not be made. The control plane's log has the details.</p>
      </BarePage>,
      500,
    );
  });

  dash.get("/assets/dashboard.css", (c) => {
    c.header("cache-control", "public, max-age=300");
    return c.body(STYLESHEET, 200, { "content-type": "text/css; charset=utf-8" });
  });
  dash.get("/assets/dashboard.js", (c) => {
    c.header("cache-control", "public, max-age=300");
    return c.body(SCRIPT, 200, { "content-type": "text/javascript; charset=utf-8" });
  });

  registerSignIn(dash);

  // Everything below needs a session; without one, no data: the sign-in page.
  dash.use(async (c, next) => {
    c.header("cache-control", "no-store");
    const { db, publicKeys } = c.var.deps;
    const session = await sessionOrWhyNot(c, db, publicKeys);
    if (typeof session === "string") {
      // A form sent after the session ended comes back to its page (what was typed is gone).
      const back = c.req.path + (c.req.method === "GET" ? new URL(c.req.url).search : "");
      const why = session === "no-project" ? "project" : "1";
      const ended = hasSessionCookie(c) ? `&ended=${why}` : "";
      return c.redirect(`/dashboard/login?next=${encodeURIComponent(back)}${ended}`, 303);
    }
    c.set("session", session);
    c.set("api", apiFor(c, session, inProcess));
    await next();
  });
  // `/dashboard` as mounted; `/dashboard/` (the address the README gives) falls to the last route.
  dash.get("/", (c) => c.redirect("/dashboard/runs", 303));
  registerRuns(dash);
  registerRun(dash);
  registerApps(dash);
  registerAppOutput(dash);
  registerAppRollback(dash);
  registerAppDelete(dash);
  registerApiKeys(dash);
  registerProjectDelete(dash);
  registerAuditLog(dash);
  registerSecrets(dash);
  registerHosts(dash);
  // Last, so only what no page took (a sub-app's notFound is not used once it is mounted).
  dash.all("*", (c) =>
    c.req.path === "/dashboard/"
      ? c.redirect("/dashboard/runs", 303)
      : c.req.method === "GET" && c.req.path.endsWith("/")
        ? // `/dashboard/runs/`: the page without its last slash
          c.redirect(c.req.path.replace(/\/+$/, "") + new URL(c.req.url).search, 303)
        : c.html(
            <BarePage title="Not found">
              <p>
                There is no page at <code>{c.req.path}</code>. <a href="/dashboard/runs">Runs</a>
              </p>
            </BarePage>,
            404,
          ),
  );

  app.route("/dashboard", dash as unknown as Hono<AppEnv>);
}
