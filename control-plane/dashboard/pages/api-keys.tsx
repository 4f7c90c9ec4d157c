/**
 * `/dashboard/api-keys`: the project's service accounts, and its users (read-only), 50 of each a
 * page. Create one with a name, an expiry date and a role; its token is shown once, on the
 * answer to the form (with a copy button and a warning; in no cookie or address), never again;
 * revoke one behind a confirmation. Through the management API, so owners only, and audited
 * as there (`source: "dashboard"` in the entry's metadata).
 */
import type { Hono } from "hono";
import { tokenState } from "../../../common/token-state.ts";
import type { DashCtx, DashEnv } from "../api.ts";
import { setFlash, takeFlash } from "../flash.ts";
import { Page } from "../layout.tsx";
import {
  madeSince,
  oneAtATime,
  type SentAgain,
  SentAgainNotice,
  SinceField,
} from "../sent-again.tsx";
import {
  EmptyRow,
  Field,
  Notice,
  Pager,
  pageQuery,
  Status,
  Table,
  Time,
  withQuery,
} from "../ui.tsx";
import { type ProjectUser, ProjectUsers } from "./project-users.tsx";
import { TokenOnce } from "./token-once.tsx";

const PATH = "/dashboard/api-keys";

interface Account {
  id: string;
  name: string;
  role: string;
  createdAt: string;
  expiresAt: string;
  revokedAt: string | null;
  /** Its token's signing key was retired: the token is refused, though not revoked. */
  keyRetiredAt?: string | null;
  lastUsedAt?: string | null;
  /** Who made it: a user's or another account's id, and its name while it exists. */
  createdBy: string;
  createdByName: string | null;
}

type Flash =
  | { kind: "error"; message: string; name?: string; expires?: string; role?: string }
  | { kind: "revoked"; name: string }
  | SentAgain;

/** The date `days` from today (the form's default expiry). */
function inDays(days: number): string {
  return new Date(Date.now() + days * 86_400_000).toISOString().slice(0, 10);
}

/**
 * Where the page's lists are: each pages on its own, `cursor` in the address for the accounts,
 * `users` for the users. The create form, and a revoke's confirmation and form, carry it, to
 * come back there.
 */
const placeOf = (c: DashCtx) => ({
  cursor: c.req.query("cursor") || undefined,
  users: c.req.query("users") || undefined,
});

/** The lists; `made`: the account the POST being answered made, its token shown this once. */
async function listPage(c: DashCtx, made?: { name: string; token: string }) {
  const flash = made ? undefined : takeFlash<Flash>(c, PATH);
  const place = placeOf(c);
  const { cursor, users: usersCursor } = place;
  const [listed, people] = await Promise.all([
    c.var.api.project<{ serviceAccounts: Account[]; nextPageToken?: string }>(
      "GET",
      `/service-accounts${pageQuery(cursor)}`,
    ),
    c.var.api.project<{ users: ProjectUser[]; nextPageToken?: string }>(
      "GET",
      `/users${pageQuery(usersCursor)}`,
    ),
  ]);
  const failed = flash?.kind === "error" ? flash : undefined;
  return c.html(
    <Page title="API keys" section={PATH} session={c.var.session}>
      {made ? <TokenOnce c={c} name={made.name} token={made.token} /> : null}
      {flash?.kind === "revoked" ? (
        <Notice kind="info">{`${flash.name} is revoked: its token no longer works.`}</Notice>
      ) : null}
      {failed ? <Notice kind="error">{failed.message}</Notice> : null}
      {flash?.kind === "sent-again" ? (
        <SentAgainNotice flash={flash} what="service account" />
      ) : null}
      {listed.ok ? (
        <>
          <h2>New service account</h2>
          <form method="post" action={withQuery(PATH, place)} class="filters">
            <Field
              label="Name"
              name="name"
              required
              maxlength={64}
              value={failed?.name}
              hint="e.g. ci-staging"
            />
            <Field
              label="Expires"
              name="expires"
              type="date"
              required
              value={failed?.expires ?? inDays(90)}
              hint="At the end of that day (UTC)"
            />
            <Field
              label="Role"
              name="role"
              value={failed?.role ?? "member"}
              options={[
                { value: "caller", label: "caller: call the apps, nothing more" },
                { value: "member", label: "member: deploy and run" },
                { value: "owner", label: "owner: also tokens, secrets, audit log" },
              ]}
            />
            <SinceField />
            <button type="submit">Create</button>
          </form>
          <h2>Service accounts</h2>
          <Table
            label="Service accounts"
            head={["Name", "Role", "State", "Created", "Expires", "Last used", ""]}
          >
            {listed.data.serviceAccounts.length === 0 ? (
              <EmptyRow span={7}>None yet.</EmptyRow>
            ) : (
              listed.data.serviceAccounts.map((a) => (
                <tr>
                  <td class="name">
                    {a.name}
                    {/* A revoked or expired account's name may be taken again (and databases from before
                        2026-11-27 may hold live names twice): the id tells accounts apart and is the
                        audit log's actor. */}
                    <div class="hint mono">
                      <a href={`/dashboard/audit-log?actor=${encodeURIComponent(a.id)}`}>{a.id}</a>
                    </div>
                  </td>
                  <td>{a.role}</td>
                  <td>
                    <Status value={tokenState(a)} />
                  </td>
                  <td>
                    <Time at={a.createdAt} />
                    <div class="hint name" title={a.createdBy}>
                      by {a.createdByName ?? a.createdBy}
                    </div>
                  </td>
                  <td>
                    <Time at={a.expiresAt} />
                  </td>
                  <td>
                    {a.lastUsedAt ? <Time at={a.lastUsedAt} /> : <span class="muted">never</span>}
                  </td>
                  <td>
                    {a.revokedAt ? null : (
                      <a
                        class="button secondary"
                        href={withQuery(`${PATH}/${a.id}/revoke`, place)}
                        aria-label={`Revoke ${a.name}`}
                      >
                        Revoke
                      </a>
                    )}
                  </td>
                </tr>
              ))
            )}
          </Table>
          {listed.data.nextPageToken || cursor ? (
            <Pager
              path={PATH}
              query={{ users: usersCursor }}
              next={listed.data.nextPageToken}
              first={Boolean(cursor)}
              label="Pages of service accounts"
            />
          ) : null}
          <ProjectUsers listed={people} />
          {people.ok && (people.data.nextPageToken || usersCursor) ? (
            <Pager
              path={PATH}
              query={{ cursor }}
              next={people.data.nextPageToken}
              first={Boolean(usersCursor)}
              param="users"
              label="Pages of users"
            />
          ) : null}
        </>
      ) : (
        <Notice kind="error">
          {listed.status === 403
            ? `API keys are for the project's owners: ${listed.message}.`
            : listed.message}
        </Notice>
      )}
    </Page>,
  );
}

export function registerApiKeys(dash: Hono<DashEnv>) {
  dash.get(PATH.replace("/dashboard", ""), (c) => listPage(c));

  dash.post(PATH.replace("/dashboard", ""), async (c) => {
    const form = await c.req.parseBody();
    const field = (k: string) => (typeof form[k] === "string" ? (form[k] as string).trim() : "");
    const [name, expires, role] = [field("name"), field("expires"), field("role")];
    const me = c.var.session.principal.id;
    return oneAtATime([PATH, c.var.session.projectId, me, name, form.since], async () => {
      // The newest accounts come first: one this very form made is on the first page.
      const listed = await c.var.api.project<{ serviceAccounts: Account[] }>(
        "GET",
        "/service-accounts",
      );
      const again = listed.ok
        ? madeSince(listed.data.serviceAccounts, { name, since: form.since, me })
        : undefined;
      if (again) {
        const { id, createdAt } = again;
        setFlash(c, PATH, { kind: "sent-again", name: again.name, id, createdAt });
        return c.redirect(withQuery(PATH, placeOf(c)), 303);
      }
      const expiresAt = /^\d{4}-\d{2}-\d{2}$/.test(expires) ? `${expires}T23:59:59Z` : expires;
      const created = await c.var.api.project<{ token: string; name: string }>(
        "POST",
        "/service-accounts",
        { name, expiresAt, role },
      );
      // The token is shown on this answer, above the pages the lists were on: it rides in no
      // cookie (a flash cookie had held it up to 60 s, in the browser's cookie store) or address.
      if (created.ok) return listPage(c, created.data);
      setFlash(c, PATH, { kind: "error", message: created.message, name, expires, role });
      return c.redirect(withQuery(PATH, placeOf(c)), 303);
    });
  });

  dash.get("/api-keys/:id/revoke", async (c) => {
    const id = c.req.param("id");
    const listed = await c.var.api.project<{ serviceAccounts: Account[] }>(
      "GET",
      "/service-accounts",
    );
    const account = listed.ok ? listed.data.serviceAccounts.find((a) => a.id === id) : undefined;
    return c.html(
      <Page title="Revoke a service account" section={PATH} session={c.var.session}>
        {account?.revokedAt ? (
          <Notice kind="info">{`${account.name} is revoked already: its token no longer works.`}</Notice>
        ) : account ? (
          <form method="post" action={withQuery(`${PATH}/${id}/revoke`, placeOf(c))} class="stack">
            <p>
              Revoke <strong>{account.name}</strong> ({account.role})? Its token stops working on
              the management API at once and on the run API within 10 seconds; this cannot be
              undone.
            </p>
            <button type="submit" class="danger">
              Revoke
            </button>
            <a href={withQuery(PATH, placeOf(c))}>Keep it</a>
          </form>
        ) : (
          <Notice kind="error">{listed.ok ? `No service account '${id}'.` : listed.message}</Notice>
        )}
      </Page>,
      account ? 200 : 404,
    );
  });

  dash.post("/api-keys/:id/revoke", async (c) => {
    const id = c.req.param("id");
    const listed = await c.var.api.project<{ serviceAccounts: Account[] }>(
      "GET",
      "/service-accounts",
    );
    const name = (listed.ok && listed.data.serviceAccounts.find((a) => a.id === id)?.name) || id;
    const revoked = await c.var.api.project(
      "DELETE",
      `/service-accounts/${encodeURIComponent(id)}`,
    );
    setFlash(
      c,
      PATH,
      revoked.ok ? { kind: "revoked", name } : { kind: "error", message: revoked.message },
    );
    return c.redirect(withQuery(PATH, placeOf(c)), 303);
  });
}
