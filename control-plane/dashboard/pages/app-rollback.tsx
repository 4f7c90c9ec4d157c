/**
 * "Roll back to this version" on an app's page (`/dashboard/apps/{name}`): offered beside each
 * earlier version whose files are kept (the versions list's `kept`), asked on a confirmation page
 * of its own (`/dashboard/apps/{name}/versions/{N}/rollback`), whose form calls the API
 * (`POST …/apps/{name}/versions/{N}/redeploy`, docs/api.md "Rolling back an app") and goes back
 * to the app's page (Post/Redirect/Get), which says what was done, or the API's refusal in its
 * own words.
 */
import type { Context, Hono } from "hono";
import { KEPT_BUNDLES } from "../../bundles.ts";
import type { DashEnv } from "../api.ts";
import { setFlash, takeFlash } from "../flash.ts";
import { Page } from "../layout.tsx";
import { appPage, Notice } from "../ui.tsx";

type Flash =
  | { kind: "done"; from: number; version: number; started: boolean }
  | { kind: "error"; from: number; message: string };

const rollbackPath = (name: string, version: number) =>
  `${appPage(name)}/versions/${version}/rollback`;

/** Whether the API takes a rollback to `v` while `live` is the app's version. */
const offered = (v: { version: number; kept?: boolean }, live: number) =>
  v.kept === true && v.version !== live;

/** The versions table's cell of `v`: its action, where the API would take it. */
export function RollbackCell({
  name,
  version,
  live,
  liveDigest,
}: {
  name: string;
  version: { version: number; kept?: boolean; digest?: string | null };
  live: number;
  /** The live version's files: a version with the same would deploy the same code again. */
  liveDigest?: string | null;
}) {
  const same = version.version !== live && !!version.digest && version.digest === liveDigest;
  return (
    <td>
      {same ? (
        <span class="muted">the live code</span>
      ) : offered(version, live) ? (
        <a
          href={rollbackPath(name, version.version)}
          aria-label={`Roll back to version ${version.version}`}
        >
          Roll back to this version
        </a>
      ) : version.version === live ? (
        <span class="muted">live</span>
      ) : null}
    </td>
  );
}

/** What the last rollback from this page did, once, above the app's page. */
export function RollbackNotice({ c, name }: { c: Context; name: string }) {
  const flash = takeFlash<Flash>(c, appPage(name));
  if (!flash) return null;
  if (flash.kind === "error")
    return (
      <Notice kind="error">{`Not rolled back to version ${flash.from}: ${flash.message}`}</Notice>
    );
  return (
    <Notice kind="info">
      {`Rolled ${name} back to version ${flash.from}'s code as version ${flash.version}: new calls get it${flash.started ? ", and a replica of it started first" : ""}.`}
    </Notice>
  );
}

const ROUTE = "/apps/:name/versions/:version{[1-9][0-9]{0,8}}/rollback";

export function registerAppRollback(dash: Hono<DashEnv>) {
  dash.get(ROUTE, async (c) => {
    const name = c.req.param("name");
    const from = Number(c.req.param("version"));
    const path = `/apps/${encodeURIComponent(name)}`;
    // Only the KEPT_BUNDLES newest versions keep their files: one of them, or none at all.
    const [app, versions] = await Promise.all([
      c.var.api.project<{ version: number }>("GET", path),
      c.var.api.project<{
        versions: Array<{ version: number; kept?: boolean; digest?: string | null }>;
      }>("GET", `${path}/versions?limit=${KEPT_BUNDLES}`),
    ]);
    const refused = !app.ok ? app : !versions.ok ? versions : undefined;
    const live = app.ok ? app.data.version : 0;
    const find = (n: number) =>
      versions.ok ? versions.data.versions.find((v) => v.version === n) : undefined;
    const version = find(from);
    // Its files are the live version's (a rollback to it made since: Back to this page after
    // one): the app page offers no rollback then, and neither does this page.
    const digest = version?.digest;
    const same = from !== live && !!digest && digest === find(live)?.digest;
    const title = "Roll back an app";
    return c.html(
      <Page title={title} section="/dashboard/apps" session={c.var.session}>
        {refused ? (
          <Notice kind="error">{refused.message}</Notice>
        ) : from === live ? (
          <Notice kind="info">{`Version ${from} of ${name} is the live one already.`}</Notice>
        ) : same ? (
          <Notice kind="info">
            {`Version ${from}'s code is live already, as version ${live}: a rollback to it would deploy the same code again. `}
            <a href={appPage(name)}>Back to {name}</a>
          </Notice>
        ) : !version || !offered(version, live) ? (
          <Notice kind="info">
            {`Version ${from} of ${name} cannot be rolled back to: ${from > live ? "it has no such version" : `only the ${KEPT_BUNDLES} newest versions keep their files. Deploy its folder as it was at that version instead (runlet deploy)`}.`}
          </Notice>
        ) : (
          <form method="post" action={rollbackPath(name, from)} class="stack">
            <p>
              Roll <strong>{name}</strong> back to version {from}'s code? Its files and runlet.toml,
              as they were, are deployed as version {live + 1}: a replica of it starts on a runtime
              host first, as for a deploy, and new calls then get it. Version {live} stays in the
              list, and can be rolled back to in turn.
            </p>
            {/* The live version it was asked against: a form sent again later (Back, then
                the button once more) deploys nothing once another version is live. */}
            <input type="hidden" name="live" value={String(live)} />
            <button type="submit">Roll back to version {from}</button>
            <a href={appPage(name)}>Keep version {live} live</a>
          </form>
        )}
      </Page>,
      refused
        ? refused.status === 404
          ? 404
          : refused.status === 403
            ? 403
            : 200
        : from > live
          ? 404 // no such version, as the other pages' "no such …" are
          : 200,
    );
  });

  dash.post(ROUTE, async (c) => {
    const name = c.req.param("name");
    const from = Number(c.req.param("version"));
    const shown = (await c.req.parseBody()).live;
    if (typeof shown === "string" && shown !== "") {
      const app = await c.var.api.project<{ version: number }>(
        "GET",
        `/apps/${encodeURIComponent(name)}`,
      );
      if (app.ok && String(app.data.version) !== shown) {
        const message = `${name}'s live version is ${app.data.version} now, not ${shown} as when the confirmation was shown: nothing was deployed.`;
        setFlash(c, appPage(name), { kind: "error", from, message } satisfies Flash);
        return c.redirect(appPage(name), 303);
      }
    }
    const answer = await c.var.api.project<{ version: number; started: unknown }>(
      "POST",
      `/apps/${encodeURIComponent(name)}/versions/${from}/redeploy`,
    );
    setFlash(
      c,
      appPage(name),
      answer.ok
        ? ({
            kind: "done",
            from,
            version: answer.data.version,
            started: answer.data.started !== null,
          } satisfies Flash)
        : ({ kind: "error", from, message: answer.message } satisfies Flash),
    );
    return c.redirect(appPage(name), 303);
  });
}
