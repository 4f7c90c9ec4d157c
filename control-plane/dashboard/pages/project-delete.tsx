/**
 * Deleting the project the pages show (`/dashboard/project/delete`), from the API keys page's
 * owner section: asked on a confirmation page of its own that names the project and says what
 * goes, whose form calls `DELETE /v2/projects/{id}` (owners; audited there, `source:
 * "dashboard"`) and comes back to this page (Post/Redirect/Get), which then says it was deleted
 * and shows another of the user's projects, or the API's refusal in its own words. A project that
 * still has apps is not offered the button: the page names them, each a link to its page, where
 * "Delete the app…" deletes it (the API would refuse, 409).
 * Works without JavaScript, within the dashboard's CSP.
 */
import type { Hono } from "hono";
import type { DashEnv } from "../api.ts";
import { setFlash, takeFlash } from "../flash.ts";
import { Page } from "../layout.tsx";
import { appPage, Notice } from "../ui.tsx";

export const DELETE_PROJECT_PATH = "/dashboard/project/delete";
const KEYS = "/dashboard/api-keys";
/** How many of the project's apps the page names before "and N more". */
const NAMED = 5;

type Flash = { kind: "deleted"; id: string; name: string } | { kind: "error"; message: string };

export function registerProjectDelete(dash: Hono<DashEnv>) {
  dash.get("/project/delete", async (c) => {
    const { api, session } = c.var;
    const flash = takeFlash<Flash>(c, DELETE_PROJECT_PATH);
    if (flash?.kind === "deleted") {
      const now = session.projects.find((p) => p.id === session.projectId);
      return c.html(
        <Page title="Project deleted" section={KEYS} session={session}>
          <Notice kind="info">
            {`Deleted project ${flash.name} (${flash.id}). The pages now show ${now?.name ?? session.projectId}.`}
          </Notice>
          <a href="/dashboard/runs">Runs</a>
        </Page>,
      );
    }
    const [project, apps] = await Promise.all([
      api.project<{ id: string; name: string; role: string }>("GET", ""),
      api.project<{ apps: Array<{ name: string }> }>("GET", "/apps"),
    ]);
    const names = apps.ok ? apps.data.apps.map((a) => a.name) : [];
    const more = names.length > NAMED ? ` and ${names.length - NAMED} more` : "";
    const back = <a href={KEYS}>Keep it</a>;
    return c.html(
      <Page title="Delete the project" section={KEYS} session={session}>
        {flash?.kind === "error" ? <Notice kind="error">{flash.message}</Notice> : null}
        {!project.ok ? (
          <Notice kind="error">{project.message}</Notice>
        ) : project.data.role !== "owner" ? (
          <Notice kind="error">{`Only the project's owners may delete ${project.data.name}.`}</Notice>
        ) : names.length > 0 ? (
          <Notice kind="info">
            {`${project.data.name} still has ${names.length === 1 ? "an app" : `${names.length} apps`}: `}
            {/* Each a link to its page, whose "Delete the app…" deletes it. */}
            {names.slice(0, NAMED).map((n, i) => (
              <>
                {i > 0 ? ", " : ""}
                <a href={appPage(n)}>{n}</a>
              </>
            ))}
            {`${more}. Delete ${names.length === 1 ? "it" : "each"} first (Delete the app… on its page, or runlet apps delete NAME), then the project.`}{" "}
            {back}
          </Notice>
        ) : (
          <form method="post" action={DELETE_PROJECT_PATH} class="stack">
            <input type="hidden" name="project" value={project.data.id} />
            <p>
              Delete project <strong>{project.data.name}</strong> (<code>{project.data.id}</code>)?
              Its service accounts are revoked (their tokens stop working at once), its secrets and
              its members are removed, and no one can open it again, here or through the API. Its
              audit log stays stored but can no longer be read: export it first from the Audit log
              page if you will need it. This cannot be undone.
            </p>
            <button type="submit" class="danger">
              Delete project
            </button>
            {back}
          </form>
        )}
      </Page>,
      project.ok ? 200 : project.status === 404 ? 404 : 403,
    );
  });

  dash.post("/project/delete", async (c) => {
    const { api, session } = c.var;
    // The project this page asked about: the pages may show another since (switched in
    // another tab), which is then not deleted.
    const asked = (await c.req.parseBody()).project;
    if (asked !== session.projectId) {
      const message = `Nothing was deleted: the pages now show another project than the one you were asked about (${typeof asked === "string" ? asked : "none"}).`;
      setFlash(c, DELETE_PROJECT_PATH, { kind: "error", message });
      return c.redirect(DELETE_PROJECT_PATH, 303);
    }
    const project = await api.project<{ id: string; name: string }>("GET", "");
    const deleted = project.ok ? await api.project("DELETE", "") : project;
    setFlash(
      c,
      DELETE_PROJECT_PATH,
      deleted.ok && project.ok
        ? { kind: "deleted", id: session.projectId, name: project.data.name }
        : { kind: "error", message: deleted.ok ? "" : deleted.message },
    );
    return c.redirect(DELETE_PROJECT_PATH, 303);
  });
}
