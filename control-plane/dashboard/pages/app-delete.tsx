/**
 * "Delete the app…" on an app's page (`/dashboard/apps/{name}`), offered to the roles the API lets
 * delete one (routes/apps-delete.ts): asked on a confirmation page of its own
 * (`/dashboard/apps/{name}/delete`) that says what goes, as `runlet apps delete` asks on a
 * terminal, whose form calls `DELETE …/apps/{name}` (audited there, `source: "dashboard"`) and
 * lands on the apps list (Post/Redirect/Get), which says it was deleted. A refusal comes back to
 * the confirmation page in the API's words. Works without JavaScript, within the dashboard's CSP.
 */
import type { Context, Hono } from "hono";
import type { RunsNow } from "../../../common/app-now.ts";
import { roleMeets } from "../../auth/access.ts";
import { DELETE_APP_ROLE } from "../../routes/apps-delete.ts";
import type { DashEnv } from "../api.ts";
import { setFlash, takeFlash } from "../flash.ts";
import { Page } from "../layout.tsx";
import { appPage, Notice } from "../ui.tsx";

const APPS = "/dashboard/apps";
const deletePath = (name: string) => `${appPage(name)}/delete`;

/** Said once on the apps list (`deleted`, `gone`) or on the confirmation page (`error`). */
type Flash =
  | { kind: "deleted"; name: string }
  | { kind: "gone"; name: string; why: string }
  | { kind: "error"; message: string };

/** The app page's link to the confirmation, for those the API would let delete the app. */
export function AppDeleteLink({ c, name }: { c: Context<DashEnv>; name: string }) {
  if (!roleMeets(c.var.session.role, DELETE_APP_ROLE)) return null;
  return (
    <p>
      <a href={deletePath(name)}>Delete the app…</a>
    </p>
  );
}

/** What the last deletion from the confirmation page did, once, above the apps list. */
export function AppDeletedNotice({ c }: { c: Context }) {
  const flash = takeFlash<Flash>(c, APPS);
  if (flash?.kind === "deleted")
    return (
      <Notice kind="info">
        {`Deleted ${flash.name}: its replicas stop, and calls of it are 404 within 10 s. Its runs stay listed.`}
      </Notice>
    );
  if (flash?.kind === "gone")
    return <Notice kind="info">{`Nothing was deleted: ${flash.why}`}</Notice>;
  return null;
}

/** The question, as `runlet apps delete` asks it (cli/commands/apps.ts). */
function whatGoes(name: string, versions: number[], runs: RunsNow | undefined) {
  const live = versions[0] ? `v${versions[0]} live, ` : "";
  const count = `${versions.length} ${versions.length === 1 ? "version" : "versions"}`;
  const queue = runs
    ? `Its async runs now: ${runs.queued} queued, which fail as they come to a host; ${runs.running} running, which finish first.`
    : "Its queued async runs fail as they come to a host; running ones finish first.";
  return (
    <p>
      Delete app <strong>{name}</strong> ({live}
      {count}, with their files and deployment records)? Its replicas stop and calls of it are 404
      within 10 s. {queue} Its runs stay listed, and a later deploy of the name starts at version 1.
      This cannot be undone.
    </p>
  );
}

export function registerAppDelete(dash: Hono<DashEnv>) {
  dash.get("/apps/:name/delete", async (c) => {
    const name = c.req.param("name");
    const { api, session } = c.var;
    const flash = takeFlash<Flash>(c, deletePath(name));
    const path = `/apps/${encodeURIComponent(name)}`;
    // Every version, as the CLI counts them: what goes is said whole.
    const [app, versions, now] = await Promise.all([
      api.project<{ id: string; version: number }>("GET", path),
      api.project<{ versions: Array<{ version: number }> }>("GET", `${path}/versions`),
      api.project<{ runs?: RunsNow }>("GET", `${path}/replicas`),
    ]);
    const refused = !app.ok ? app : !versions.ok ? versions : undefined;
    return c.html(
      <Page title="Delete an app" section={APPS} session={session}>
        {flash?.kind === "error" ? <Notice kind="error">{flash.message}</Notice> : null}
        {refused ? (
          <Notice kind="error">{refused.message}</Notice>
        ) : (
          <form method="post" action={deletePath(name)} class="stack">
            {whatGoes(
              name,
              versions.ok ? versions.data.versions.map((v) => v.version) : [],
              now.ok ? now.data.runs : undefined,
            )}
            {/* The app it was asked about: a form sent again later (Back, then the button once
                more) deletes nothing once that app is gone, nor a new app of the name. */}
            <input type="hidden" name="app" value={app.ok ? app.data.id : ""} />
            <button type="submit" class="danger">
              Delete app
            </button>
            <a href={appPage(name)}>Keep it</a>
          </form>
        )}
      </Page>,
      refused ? (refused.status === 404 ? 404 : refused.status === 403 ? 403 : 200) : 200,
    );
  });

  dash.post("/apps/:name/delete", async (c) => {
    const name = c.req.param("name");
    const asked = (await c.req.parseBody()).app;
    const path = `/apps/${encodeURIComponent(name)}`;
    const app = await c.var.api.project<{ id: string; version: number }>("GET", path);
    if (app.ok && typeof asked === "string" && asked !== "" && app.data.id !== asked) {
      const why = `${name} was deployed again since the confirmation was shown, as a new app (version ${app.data.version}), which is kept.`;
      setFlash(c, APPS, { kind: "gone", name, why } satisfies Flash);
      return c.redirect(APPS, 303);
    }
    // Refused by the read (a role that may not): the DELETE's own refusal, audited as one.
    const deleted = app.ok || app.status !== 404 ? await c.var.api.project("DELETE", path) : app;
    if (deleted.ok) {
      setFlash(c, APPS, { kind: "deleted", name } satisfies Flash);
      return c.redirect(APPS, 303);
    }
    if (deleted.status === 404) {
      const why = `${name} is gone already (deleted since the confirmation was shown).`;
      setFlash(c, APPS, { kind: "gone", name, why } satisfies Flash);
      return c.redirect(APPS, 303);
    }
    setFlash(c, deletePath(name), { kind: "error", message: deleted.message } satisfies Flash);
    return c.redirect(deletePath(name), 303);
  });
}
