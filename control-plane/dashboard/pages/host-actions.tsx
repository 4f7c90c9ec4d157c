/**
 * What an operator does to a host from `/dashboard/hosts` (docs/hosts.md): Drain, Resume and
 * Remove, each offered only in the states the API takes it in, each asked on a confirmation page
 * of its own (`/dashboard/hosts/{id}/drain|resume|remove`), whose form calls the API
 * (`POST /v2/hosts/{id}/drain|resume`, `DELETE /v2/hosts/{id}`) and goes back to the list
 * (Post/Redirect/Get), which says what was done, or the API's refusal in its own words.
 */
import type { Hono } from "hono";
import type { Child } from "hono/jsx";
import type { HostView } from "../../../common/host-view.ts";
import type { Answer, DashCtx, DashEnv } from "../api.ts";
import { setFlash } from "../flash.ts";
import { Page } from "../layout.tsx";
import { Notice } from "../ui.tsx";
import { PATH, TOKENS_PATH } from "./host-tabs.tsx";

export interface Host extends HostView {
  memoryMb: number;
  registeredAt: string;
}

export type ActionName = "drain" | "resume" | "remove";

export type Flash =
  | { kind: "done"; action: ActionName; name: string }
  | { kind: "error"; action: ActionName; name: string; message: string };

/** The hosts as the API lists them, or its refusal (403 to anyone not an operator). */
export const listHosts = (c: DashCtx) => c.var.api.installation<{ hosts: Host[] }>("GET", "/hosts");

/** The API's refusal of the list, in the page's words; `what` the page is about. */
export function Refused({
  status,
  message,
  what = "Hosts",
}: {
  status: number;
  message: string;
  what?: string;
}) {
  return (
    <Notice kind="error">
      {status === 403 ? `${what} are for this Runlet's operators: ${message}.` : message}
    </Notice>
  );
}

interface Action {
  label: string;
  past: string;
  /** The states the API takes it in (and where it changes something). */
  offered: (state: string) => boolean;
  /** Why not, for a host in a state it is not offered in. */
  notFor: string;
  call: (c: DashCtx, id: string) => Promise<Answer<unknown>>;
  /** The confirmation's question; `others`: the hosts up besides this one. */
  ask: (h: Host, others: number) => Child;
  done: (name: string) => string;
}

const hostPath = (id: string) => `/hosts/${encodeURIComponent(id)}`;

export const ACTIONS: Record<ActionName, Action> = {
  drain: {
    label: "Drain",
    past: "drained",
    // A down host too: if it comes back without registering again, it stays drained.
    offered: (state) => state === "up" || state === "down",
    notFor:
      "only a host up or down is drained (a stopped one runs nothing, one stopping or drained takes no new work already)",
    call: (c, id) => c.var.api.installation("POST", `${hostPath(id)}/drain`),
    ask: (h, others) => (
      <>
        <p>
          Drain <strong>{h.name}</strong> (<code>{h.id}</code>)? The Worker sends it no new call or
          async run, and its replicas stop as their calls end; their places of{" "}
          <code>max_replicas</code> go to the other hosts. It stays drained until it is resumed (a
          crash and a restart included), or until it stops gracefully and starts again.
        </p>
        {h.state === "up" && others === 0 ? (
          <Notice kind="warn">
            It is the only host up: until another is up or this one is resumed, calls are answered
            502 ("no runtime host is up") and async runs wait in their queue.
          </Notice>
        ) : null}
      </>
    ),
    done: (name) =>
      `${name} is drained: it takes no new work, and its replicas stop as their calls end.`,
  },
  resume: {
    label: "Resume",
    past: "resumed",
    offered: (state) => state === "drained",
    notFor: "only a drained host is resumed",
    call: (c, id) => c.var.api.installation("POST", `${hostPath(id)}/resume`),
    ask: (h) => (
      <p>
        Resume <strong>{h.name}</strong> (<code>{h.id}</code>)? It takes work again: new calls and
        async runs, and replicas of the apps sent there.
      </p>
    ),
    done: (name) => `${name} is resumed: it takes work again.`,
  },
  remove: {
    label: "Remove",
    past: "removed",
    offered: (state) => state === "down" || state === "stopped",
    notFor: "only a host down or stopped is removed: stop it first",
    call: (c, id) => c.var.api.installation("DELETE", hostPath(id)),
    ask: (h) => (
      <p>
        Remove <strong>{h.name}</strong> (<code>{h.id}</code>) from the list? What it held of each
        app's <code>max_replicas</code> is free at once, and an async run handed to it fails. If it
        comes back, it joins as a new host with a new id: to keep it out, revoke its token (
        <a href={TOKENS_PATH}>Join tokens</a>, or <code>runlet hosts revoke</code>). This cannot be
        undone.
      </p>
    ),
    done: (name) => `${name} is removed from the list. If it comes back, it joins as a new host.`,
  },
};

const ROUTE = "/hosts/:id/:action{drain|resume|remove}";

export function registerHostActions(dash: Hono<DashEnv>) {
  dash.get(ROUTE, async (c) => {
    const id = c.req.param("id");
    const name = c.req.param("action") as ActionName;
    const action = ACTIONS[name];
    const listed = await listHosts(c);
    const host = listed.ok ? listed.data.hosts.find((h) => h.id === id) : undefined;
    const others = listed.ok
      ? listed.data.hosts.filter((h) => h.id !== id && h.state === "up").length
      : 0;
    const title = `${action.label} a host`;
    return c.html(
      <Page title={title} section={PATH} session={c.var.session}>
        {!listed.ok ? (
          <Refused status={listed.status} message={listed.message} />
        ) : !host ? (
          <Notice kind="error">{`No host '${id}' in the list: removed, or forgotten 10 min after its last word.`}</Notice>
        ) : !action.offered(host.state) ? (
          <Notice kind="info">{`${host.name} is ${host.state}: ${action.notFor}.`}</Notice>
        ) : (
          <form method="post" action={`${PATH}/${encodeURIComponent(id)}/${name}`} class="stack">
            {action.ask(host, others)}
            <button type="submit" class={name === "resume" ? undefined : "danger"}>
              {action.label}
            </button>
            <a href={PATH}>Keep it as it is</a>
          </form>
        )}
      </Page>,
      !listed.ok && listed.status === 403 ? 403 : host ? 200 : 404,
    );
  });

  dash.post(ROUTE, async (c) => {
    const id = c.req.param("id");
    const name = c.req.param("action") as ActionName;
    const listed = await listHosts(c);
    const hostName = (listed.ok && listed.data.hosts.find((h) => h.id === id)?.name) || id;
    const answer = await ACTIONS[name].call(c, id);
    setFlash(
      c,
      PATH,
      answer.ok
        ? { kind: "done", action: name, name: hostName }
        : { kind: "error", action: name, name: hostName, message: answer.message },
    );
    return c.redirect(PATH, 303);
  });
}
