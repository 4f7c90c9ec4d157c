/**
 * `/dashboard/hosts/tokens`: the join tokens new runtime hosts register with (docs/hosts.md), for
 * this Runlet's operators, as `runlet hosts tokens` lists them: name, id, who made each, when,
 * and whether it is revoked. Create one by name (`POST /v2/hosts/tokens`); revoke one behind a
 * confirmation (host-token-revoke.tsx). Anyone else gets the API's refusal (403), and no link.
 *
 * A new token is shown once, with the command a new machine joins with, on the answer to the
 * form's POST itself: it is never in an address, a redirect, a cookie or a log line, and the
 * page is `no-store` (as every page). The form carries when it was made, so sending it again
 * (a reload of that answer) makes no second token: the list says the first was shown already.
 */
import type { Hono } from "hono";
import { hostJoinCommand } from "../../../common/host-join.ts";
import { publicOrigin } from "../../behind-proxy.ts";
import type { DashCtx, DashEnv } from "../api.ts";
import { setFlash, takeFlash } from "../flash.ts";
import { Page } from "../layout.tsx";
import { madeSince, oneAtATime, SentAgainNotice, SinceField } from "../sent-again.tsx";
import { EmptyRow, Field, Notice, SecretOnce, Status, Table, Time } from "../ui.tsx";
import { Refused } from "./host-actions.tsx";
import { HostTabs, PATH, TOKENS_PATH } from "./host-tabs.tsx";
import {
  type HostToken,
  hostsOf,
  listTokens,
  RevokeLink,
  registerHostTokenRevoke,
  type TokenFlash,
} from "./host-token-revoke.tsx";

/** A token just made: the API's answer, the only time it holds the token. */
type Made = HostToken & { token: string };

function ShownOnce({ made, command }: { made: Made; command: string }) {
  const join = (
    <>
      <h3>On the new machine</h3>
      <p>
        In a checkout of Runlet (<code>npm install</code>), with the address the Worker reaches the
        machine at in place of <code>&lt;its address&gt;</code> (docs/hosts.md, "Running a host on
        another machine"):
      </p>
      <code id="join-command">{command}</code>
      <button type="button" data-copy="join-command" aria-label="Copy the command">
        Copy
      </button>
    </>
  );
  return (
    <SecretOnce title={`Join token ${made.name}`} secret={made.token} after={join}>
      <p>
        <strong>Copy it now: it is shown this once.</strong> Runlet keeps only its hash, and shows
        it to nobody again, not on a reload of this page either. Lost, revoke it and make another.
      </p>
    </SecretOnce>
  );
}

function Said({ flash }: { flash: TokenFlash | undefined }) {
  if (flash?.kind === "revoked")
    return (
      <Notice kind="info">{`${flash.name} is revoked: hosts that joined with it are refused at their next heartbeat, and stop.`}</Notice>
    );
  if (flash?.kind === "refused")
    return (
      <Notice kind="error">
        {flash.action === "create"
          ? `No join token was made: ${flash.message}.`
          : `${flash.name} was not revoked: ${flash.message}.`}
      </Notice>
    );
  if (flash?.kind === "sent-again") return <SentAgainNotice flash={flash} what="token" />;
  return null;
}

function TokenRow({ t, me }: { t: HostToken; me: string }) {
  const by =
    t.createdByName === null
      ? undefined
      : `${t.createdByName}${t.createdBy === me ? " (you)" : ""}`;
  return (
    <tr>
      <td class="name">
        {t.name}
        <div class="hint mono">{t.id}</div>
      </td>
      <td class="name">{by ?? <span class="mono">{t.createdBy}</span>}</td>
      <td>
        <Time at={t.createdAt} />
      </td>
      <td>
        {t.revokedAt ? (
          <>
            <Status value="revoked" /> at <Time at={t.revokedAt} />
          </>
        ) : (
          <Status value="active" />
        )}
      </td>
      <td class="name">{hostsOf(t)}</td>
      <td>{t.revokedAt ? null : <RevokeLink token={t} />}</td>
    </tr>
  );
}

const HEAD = ["Name", "Created by", "Created", "State", "Hosts", ""];

/** The list; `made`: the token the POST being answered made, shown above it this once. */
async function listPage(c: DashCtx, made?: Made) {
  const flash = made ? undefined : takeFlash<TokenFlash>(c, TOKENS_PATH);
  const listed = await listTokens(c);
  const typed = flash?.kind === "refused" && flash.action === "create" ? flash.name : undefined;
  const origin = publicOrigin(c, c.var.deps.trustProxy === true);
  return c.html(
    <Page title="Join tokens" section={PATH} session={c.var.session}>
      {listed.ok ? <HostTabs current={TOKENS_PATH} /> : null}
      <Said flash={flash} />
      {made ? <ShownOnce made={made} command={hostJoinCommand(origin, made.token)} /> : null}
      {listed.ok ? (
        <>
          <p class="muted">
            A runtime host on another machine joins this Runlet with a join token (
            <code>RUNLET_HOST_TOKEN</code>); revoking it stops the hosts that joined with it. Only a
            hash of each is kept. The same as <code>runlet hosts token</code> and{" "}
            <code>runlet hosts tokens</code>.
          </p>
          <h2>New join token</h2>
          <form method="post" action={TOKENS_PATH} class="filters">
            <Field
              label="Name"
              name="name"
              required
              maxlength={64}
              value={typed}
              hint="e.g. rack-2: the machine or the group it is for"
            />
            <SinceField />
            <button type="submit">Create</button>
          </form>
          <h2>Join tokens</h2>
          <Table label="Join tokens" head={HEAD}>
            {listed.data.tokens.length === 0 ? (
              <EmptyRow span={HEAD.length}>
                No join token yet. Make one above, then run the command it shows on the machine that
                is to join.
              </EmptyRow>
            ) : (
              // The newest first: a token just made heads the list, below where it is shown.
              [...listed.data.tokens]
                .reverse()
                .map((t) => <TokenRow t={t} me={c.var.session.principal.id} />)
            )}
          </Table>
        </>
      ) : (
        <Refused status={listed.status} message={listed.message} what="Join tokens" />
      )}
    </Page>,
    listed.ok || listed.status !== 403 ? 200 : 403,
  );
}

export function registerHostTokens(dash: Hono<DashEnv>) {
  const route = TOKENS_PATH.replace("/dashboard", "");
  dash.get(route, (c) => listPage(c));

  dash.post(route, async (c) => {
    const form = await c.req.parseBody();
    const name = typeof form.name === "string" ? form.name : "";
    const me = c.var.session.principal.id;
    return oneAtATime([TOKENS_PATH, me, name, form.since], () =>
      answerForm(c, { name, since: form.since, me }),
    );
  });

  registerHostTokenRevoke(dash);
}

/** A sent form: a new token shown on the answer, or a redirect to the list saying why not. */
async function answerForm(c: DashCtx, form: { name: string; since: unknown; me: string }) {
  const { name } = form;
  const listed = await listTokens(c);
  const again = listed.ok ? madeSince(listed.data.tokens, form) : undefined;
  if (again) {
    const { id, createdAt } = again;
    setFlash(c, TOKENS_PATH, { kind: "sent-again", name: again.name, id, createdAt });
    return c.redirect(TOKENS_PATH, 303);
  }
  // As typed: the API trims it and says what it refuses, in its words.
  const created = await c.var.api.installation<Made>("POST", "/hosts/tokens", { name });
  if (!created.ok) {
    const refused: TokenFlash = {
      kind: "refused",
      action: "create",
      name,
      message: created.message,
    };
    setFlash(c, TOKENS_PATH, refused);
    return c.redirect(TOKENS_PATH, 303);
  }
  // Shown on this answer, not after a redirect: the token rides in no cookie or address.
  return listPage(c, created.data);
}
