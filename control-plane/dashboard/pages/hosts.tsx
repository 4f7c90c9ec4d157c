/**
 * `/dashboard/hosts`: this Runlet's runtime hosts, for its operators (docs/hosts.md). Each host's
 * state as `GET /v2/hosts` says it and when it was last heard from, its slots and memory, its
 * load and its apps as `runlet hosts` shows them (a down host's are its last heartbeat's);
 * Drain, Resume and Remove, each behind a confirmation page of its own (host-actions.tsx). Anyone
 * else gets the API's refusal (403), and the navigation offers them no link here. Beside it, the
 * join tokens new hosts register with (host-tokens.tsx).
 */
import type { Hono } from "hono";
import { hostView } from "../../../common/host-view.ts";
import type { DashCtx, DashEnv } from "../api.ts";
import { takeFlash } from "../flash.ts";
import { Page } from "../layout.tsx";
import { EmptyRow, Notice, Status, Table, Time } from "../ui.tsx";
import {
  ACTIONS,
  type ActionName,
  type Flash,
  type Host,
  listHosts,
  Refused,
  registerHostActions,
} from "./host-actions.tsx";
import { HostTabs, PATH } from "./host-tabs.tsx";
import { registerHostTokens } from "./host-tokens.tsx";

/** The list follows the hosts' heartbeats (every 2 s): a drained host's load as it falls. */
const REFRESH_MS = 3_000;

/** `4096 MiB` as `4 GiB`: what the host said it has (`RUNLET_HOST_MEMORY_MB`, or the machine's). */
function memory(mb: number): string {
  return mb < 1024 ? `${mb} MiB` : `${(mb / 1024).toFixed(1).replace(/\.0$/, "")} GiB`;
}

function HostRow({ h, now }: { h: Host; now: number }) {
  const shown = hostView(h, now);
  // "down, silent 3 min": the API's word coloured, what `runlet hosts` adds after it.
  const detail = shown.state.slice(h.state.length);
  const offered = (Object.keys(ACTIONS) as ActionName[]).filter((a) => ACTIONS[a].offered(h.state));
  // Name and id, state and when last heard, each in one cell: the table fits a laptop's width.
  return (
    <tr>
      <td class="name">
        {h.name}
        <div class="hint mono">{h.id}</div>
      </td>
      <td class="mono">{h.address}</td>
      <td>
        <Status value={h.state} />
        {detail ? <span class="muted">{detail}</span> : null}
        <div class="hint">
          heard <Time at={h.seenAt} />
        </div>
      </td>
      <td class="num">{h.slots}</td>
      <td class="num">{memory(h.memoryMb)}</td>
      <td class="num">{shown.busy}</td>
      <td class="num">{shown.queued}</td>
      <td class="apps">{shown.apps}</td>
      <td>
        {offered.map((a) => (
          <a
            class="button secondary"
            href={`${PATH}/${encodeURIComponent(h.id)}/${a}`}
            aria-label={`${ACTIONS[a].label} ${h.name}`}
          >
            {ACTIONS[a].label}
          </a>
        ))}
      </td>
    </tr>
  );
}

const HEAD = ["Name", "Address", "State", "Slots", "Memory", "Busy", "Queued", "Apps", ""];

async function listPage(c: DashCtx) {
  const flash = takeFlash<Flash>(c, PATH);
  const listed = await listHosts(c);
  const now = Date.now();
  return c.html(
    <Page title="Hosts" section={PATH} session={c.var.session}>
      {flash?.kind === "done" ? (
        <Notice kind="info">{ACTIONS[flash.action].done(flash.name)}</Notice>
      ) : null}
      {flash?.kind === "error" ? (
        <Notice kind="error">{`${flash.name} was not ${ACTIONS[flash.action].past}: ${flash.message}.`}</Notice>
      ) : null}
      {listed.ok ? (
        <>
          <HostTabs current={PATH} />
          <p class="muted">
            Every runtime host that registered with this Runlet, as its last heartbeat said. A down
            host's load and apps are those of its last heartbeat; a stopped one runs nothing. The
            same as <code>runlet hosts</code>.
          </p>
          <Table label="Hosts" head={HEAD} id="hosts" refresh={REFRESH_MS}>
            {listed.data.hosts.length === 0 ? (
              <EmptyRow span={HEAD.length}>No runtime host has registered yet.</EmptyRow>
            ) : (
              listed.data.hosts.map((h) => <HostRow h={h} now={now} />)
            )}
          </Table>
        </>
      ) : (
        <Refused status={listed.status} message={listed.message} />
      )}
    </Page>,
    listed.ok || listed.status !== 403 ? 200 : 403,
  );
}

export function registerHosts(dash: Hono<DashEnv>) {
  dash.get(PATH.replace("/dashboard", ""), listPage);
  registerHostActions(dash);
  registerHostTokens(dash);
}
