/**
 * Revoking a join token from `/dashboard/hosts/tokens` (docs/hosts.md): asked on a confirmation
 * page of its own (`/dashboard/hosts/tokens/{id}/revoke`) that says what follows, whose form
 * calls the API (`DELETE /v2/hosts/tokens/{id}`) and goes back to the list (Post/Redirect/Get),
 * which says what was done, or the API's refusal in its own words. Operators only, as the API.
 */
import type { Hono } from "hono";
import { joinedHostsText } from "../../../common/host-view.ts";
import { LOCAL_HOST_TOKEN } from "../../../common/protocol/hosts.ts";
import type { DashCtx, DashEnv } from "../api.ts";
import { setFlash } from "../flash.ts";
import { Page } from "../layout.tsx";
import type { SentAgain } from "../sent-again.tsx";
import { Notice, Time } from "../ui.tsx";
import { Refused } from "./host-actions.tsx";
import { PATH, TOKENS_PATH } from "./host-tabs.tsx";

/** A join token as `GET /v2/hosts/tokens` lists it: never the token itself. */
export interface HostToken {
  id: string;
  name: string;
  /** The id of the user who made it, and their name (null once deleted). */
  createdBy: string;
  createdByName: string | null;
  createdAt: string;
  revokedAt: string | null;
  /** The hosts registered with it: those its revoke stops. */
  hosts: Array<{ id: string; name: string; state: string }>;
}

/** A token's hosts in a line: `rack-b (up), rack-c (down)`, or none. */
export const hostsOf = (token: HostToken) => joinedHostsText(token.hosts);

/** What the list says after a form: never a token (it is shown on the answer to its POST). */
export type TokenFlash =
  | { kind: "revoked"; name: string }
  | { kind: "refused"; action: "create" | "revoke"; name: string; message: string }
  | SentAgain;

/** The join tokens as the API lists them (oldest first), or its refusal (403: not an operator). */
export const listTokens = (c: DashCtx) =>
  c.var.api.installation<{ tokens: HostToken[] }>("GET", "/hosts/tokens");

const revokePath = (id: string) => `${TOKENS_PATH}/${encodeURIComponent(id)}/revoke`;

/** The Revoke link of a token on the list. */
export function RevokeLink({ token }: { token: HostToken }) {
  return (
    <a class="button secondary" href={revokePath(token.id)} aria-label={`Revoke ${token.name}`}>
      Revoke
    </a>
  );
}

const ROUTE = "/hosts/tokens/:id/revoke";

export function registerHostTokenRevoke(dash: Hono<DashEnv>) {
  dash.get(ROUTE, async (c) => {
    const id = c.req.param("id");
    const listed = await listTokens(c);
    const token = listed.ok ? listed.data.tokens.find((t) => t.id === id) : undefined;
    return c.html(
      <Page title="Revoke a join token" section={PATH} session={c.var.session}>
        {!listed.ok ? (
          <Refused status={listed.status} message={listed.message} what="Join tokens" />
        ) : !token ? (
          <Notice kind="error">{`No join token '${id}'.`}</Notice>
        ) : token.revokedAt ? (
          <Notice kind="info">
            <strong>{token.name}</strong> is revoked already (<Time at={token.revokedAt} />
            ): hosts that joined with it are refused.
          </Notice>
        ) : (
          <form method="post" action={revokePath(id)} class="stack">
            <p>
              Revoke the join token <strong>{token.name}</strong> (<code>{token.id}</code>)? The
              hosts that joined with it are refused at their next heartbeat (within seconds), and
              stop; no machine can join with it again. This cannot be undone: a machine that is to
              run apps again needs a new token.
            </p>
            <p>
              {token.hosts.length === 0
                ? "No host is registered with it now."
                : `The hosts registered with it: ${hostsOf(token)}.`}
            </p>
            {token.name === LOCAL_HOST_TOKEN ? (
              <Notice kind="warn">
                <code>local</code> is the token of the hosts <code>runlet start</code> runs beside
                this control plane: revoking it stops them, until the next <code>runlet start</code>{" "}
                makes a new one.
              </Notice>
            ) : null}
            <button type="submit" class="danger">
              Revoke
            </button>
            <a href={TOKENS_PATH}>Keep it</a>
          </form>
        )}
      </Page>,
      !listed.ok && listed.status === 403 ? 403 : token ? 200 : 404,
    );
  });

  dash.post(ROUTE, async (c) => {
    const id = c.req.param("id");
    const listed = await listTokens(c);
    const name = (listed.ok && listed.data.tokens.find((t) => t.id === id)?.name) || id;
    const revoked = await c.var.api.installation(
      "DELETE",
      `/hosts/tokens/${encodeURIComponent(id)}`,
    );
    setFlash(
      c,
      TOKENS_PATH,
      revoked.ok
        ? ({ kind: "revoked", name } satisfies TokenFlash)
        : ({
            kind: "refused",
            action: "revoke",
            name,
            message: revoked.message,
          } satisfies TokenFlash),
    );
    return c.redirect(TOKENS_PATH, 303);
  });
}
