/**
 * `/dashboard/secrets`: the project's secret names (50 a page) and when each was last set; set or replace
 * one, delete one behind a confirmation. A value goes in and is never shown back (the page has
 * no way to read one).
 */
import type { Hono } from "hono";
import { SECRET_NAME } from "../../../common/secret-name.ts";
import type { DashEnv } from "../api.ts";
import { setFlash, takeFlash } from "../flash.ts";
import { Page } from "../layout.tsx";
import { EmptyRow, Field, Notice, Pager, pageQuery, Table, Time, withQuery } from "../ui.tsx";

const PATH = "/dashboard/secrets";

interface SecretName {
  name: string;
  updatedAt: string;
  updatedBy: string;
  updatedByName: string;
}

type Flash =
  | { kind: "saved" | "deleted"; name: string }
  | { kind: "error"; message: string; name?: string };

/** The set form, the confirmation and its form carry the list's page, to come back to it. */
const deletePath = (name: string, cursor: string | undefined) =>
  withQuery(`${PATH}/${encodeURIComponent(name)}/delete`, { cursor });

export function registerSecrets(dash: Hono<DashEnv>) {
  dash.get("/secrets", async (c) => {
    const flash = takeFlash<Flash>(c, PATH);
    const cursor = c.req.query("cursor") || undefined;
    const listed = await c.var.api.project<{ secrets: SecretName[]; nextPageToken?: string }>(
      "GET",
      `/secrets${pageQuery(cursor)}`,
    );
    return c.html(
      <Page title="Secrets" section={PATH} session={c.var.session}>
        {flash?.kind === "saved" ? (
          <Notice kind="info">{`${flash.name} is saved. The apps' running replicas that read another value are being replaced: calls from now on see it.`}</Notice>
        ) : null}
        {flash?.kind === "deleted" ? (
          <Notice kind="info">{`${flash.name} is deleted. The apps' running replicas are being replaced: calls from now on lack it.`}</Notice>
        ) : null}
        {flash?.kind === "error" ? (
          <Notice kind="error">{`${flash.message}. Nothing was saved, and the value is not kept: type or paste it again.`}</Notice>
        ) : null}
        {listed.ok ? (
          <>
            <h2>Set a secret</h2>
            <form method="post" action={withQuery(PATH, { cursor })} class="filters">
              <Field
                label="Name"
                name="name"
                required
                maxlength={128}
                // Checked in the browser: refused by the API, the name came back but the value,
                // never sent back, had to be pasted again (a PEM key, JSON credentials).
                pattern={SECRET_NAME.source.slice(1, -1)}
                value={flash?.kind === "error" ? flash.name : undefined}
                hint="Letters, digits, underscores, not starting with a digit: DATABASE_URL"
              />
              <Field
                label="Value"
                name="value"
                type="secret"
                required
                hint="Replaces the current value; never shown again. Line breaks are kept."
              />
              <button type="submit">Save</button>
            </form>
            <h2>Secrets</h2>
            <Table label="Secrets" head={["Name", "Last set", "By", ""]}>
              {listed.data.secrets.length === 0 ? (
                <EmptyRow span={4}>No secrets yet.</EmptyRow>
              ) : (
                listed.data.secrets.map((s) => (
                  <tr>
                    <td class="mono name">{s.name}</td>
                    <td>
                      <Time at={s.updatedAt} />
                    </td>
                    <td class="name" title={s.updatedBy}>
                      {s.updatedByName}
                    </td>
                    <td>
                      <a
                        class="button secondary"
                        href={deletePath(s.name, cursor)}
                        aria-label={`Delete ${s.name}`}
                      >
                        Delete
                      </a>
                    </td>
                  </tr>
                ))
              )}
            </Table>
            {listed.data.nextPageToken || cursor ? (
              <Pager
                path={PATH}
                query={{}}
                next={listed.data.nextPageToken}
                first={Boolean(cursor)}
              />
            ) : null}
          </>
        ) : (
          <Notice kind="error">
            {listed.status === 403
              ? `Secrets are for the project's owners: ${listed.message}.`
              : listed.message}
          </Notice>
        )}
      </Page>,
    );
  });

  dash.post("/secrets", async (c) => {
    const form = await c.req.parseBody();
    const name = typeof form.name === "string" ? form.name.trim() : "";
    // A browser sends a textarea's line breaks as CRLF: the value as typed or pasted has LF.
    const value = typeof form.value === "string" ? form.value.replaceAll("\r\n", "\n") : "";
    const saved = await c.var.api.project("PUT", `/secrets/${encodeURIComponent(name)}`, { value });
    setFlash(
      c,
      PATH,
      saved.ok ? { kind: "saved", name } : { kind: "error", message: saved.message, name },
    );
    // Back to the page the form was sent from: the list keeps its place.
    return c.redirect(withQuery(PATH, { cursor: c.req.query("cursor") }), 303);
  });

  dash.get("/secrets/:name/delete", async (c) => {
    const name = c.req.param("name");
    const cursor = c.req.query("cursor") || undefined;
    const listed = await c.var.api.project<{ secrets: SecretName[] }>("GET", "/secrets");
    const known = listed.ok && listed.data.secrets.some((s) => s.name === name);
    return c.html(
      <Page title="Delete a secret" section={PATH} session={c.var.session}>
        {known ? (
          <form method="post" action={deletePath(name, cursor)} class="stack">
            <p>
              Delete <strong class="mono">{name}</strong>? The apps' running replicas are replaced
              (calls they run finish first): calls from then on no longer have it. This cannot be
              undone.
            </p>
            <button type="submit" class="danger">
              Delete
            </button>
            <a href={withQuery(PATH, { cursor })}>Keep it</a>
          </form>
        ) : (
          <Notice kind="error">{listed.ok ? `No secret '${name}'.` : listed.message}</Notice>
        )}
      </Page>,
      known ? 200 : 404,
    );
  });

  dash.post("/secrets/:name/delete", async (c) => {
    const name = c.req.param("name");
    const deleted = await c.var.api.project("DELETE", `/secrets/${encodeURIComponent(name)}`);
    setFlash(
      c,
      PATH,
      deleted.ok ? { kind: "deleted", name } : { kind: "error", message: deleted.message },
    );
    return c.redirect(withQuery(PATH, { cursor: c.req.query("cursor") }), 303);
  });
}
