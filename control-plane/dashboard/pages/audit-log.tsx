/**
 * `/dashboard/audit-log` (owners; others are told why not): the API's filters `action`,
 * `actor`, `outcome`, `from`, `to` are the page's own query, so a filtered view is a permalink;
 * pages follow the API's tokens; the current filter exports as CSV or NDJSON (the API's
 * export, streamed through).
 */
import type { Hono } from "hono";
import { AUDIT_ACTIONS } from "../../audit/actions.ts";
import type { DashEnv } from "../api.ts";
import { Page } from "../layout.tsx";
import { EmptyRow, Field, Notice, Pager, Status, Table, Time } from "../ui.tsx";

const PATH = "/dashboard/audit-log";
const FILTERS = ["action", "actor", "outcome", "from", "to"] as const;

interface Entry {
  id: string;
  timestamp: string;
  action: string;
  actor: { type: string; id: string; name: string };
  outcome: string;
  target: { type: string; id: string };
  requestId: string;
  ip: string | null;
  userAgent: string | null;
  metadata: Record<string, unknown>;
}

/** A `datetime-local` value: to the minute, or with seconds and their fraction. */
const LOCAL = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?$/;

/** A `datetime-local` value (read as UTC) or an RFC 3339 time, as the API takes it. */
function rfc3339(value: string): string {
  if (!LOCAL.test(value)) return value;
  return value.length === 16 ? `${value}:00Z` : `${value}Z`;
}

/**
 * The time as the form's `datetime-local` field shows it (UTC): a permalink's RFC 3339 time
 * left the field empty, and the next Filter sent `from=` and lost the window.
 */
function fieldValue(value: string | undefined): string | undefined {
  if (!value || LOCAL.test(value)) return value;
  const at = Date.parse(value);
  if (Number.isNaN(at)) return value; // the API's 400 says what is wrong with it
  const iso = new Date(at).toISOString();
  return iso.endsWith(":00.000Z") ? iso.slice(0, 16) : iso.slice(0, 23).replace(/\.000$/, "");
}

/** The page's filters, and the API query they make. */
function filtersOf(query: Record<string, string>) {
  const page: Record<string, string | undefined> = {};
  const api = new URLSearchParams();
  for (const name of FILTERS) {
    const value = query[name]?.trim();
    if (!value) continue;
    page[name] = value;
    api.set(name, name === "from" || name === "to" ? rfc3339(value) : value);
  }
  return { page, api };
}

/** The page's filters with `actor` set to `id` (the same window, action and outcome). */
function byActor(page: Record<string, string | undefined>, id: string): URLSearchParams {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries({ ...page, actor: id }))
    if (value) query.set(name, value);
  return query;
}

/**
 * An entry's metadata and the request that made it (IP, request id, user agent), in one cell
 * that wraps: as columns of their own they made the table 1685 px wide at a 1280 px window, the
 * user agent clipped, and IP, user agent and metadata off screen until it was scrolled sideways.
 */
function Details({ entry: e }: { entry: Entry }) {
  return (
    <td class="details">
      <code>{JSON.stringify(e.metadata)}</code>
      <div class="hint">
        IP <span class="mono">{e.ip ?? "—"}</span> · request <span class="mono">{e.requestId}</span>
      </div>
      <div class="hint">{e.userAgent ?? "no user agent"}</div>
    </td>
  );
}

export function registerAuditLog(dash: Hono<DashEnv>) {
  dash.get("/audit-log", async (c) => {
    const query = c.req.query();
    const { page, api } = filtersOf(query);
    const listQuery = new URLSearchParams(api);
    listQuery.set("limit", "50");
    if (query.cursor) listQuery.set("nextToken", query.cursor);
    const listed = await c.var.api.project<{
      logs: Entry[];
      nextPageToken?: string;
      retentionDays: number;
    }>("GET", `/audit-log?${listQuery}`);
    const exportLink = (format: string) => {
      const query = new URLSearchParams(api);
      query.set("format", format);
      return `${PATH}/export?${query}`;
    };
    return c.html(
      <Page title="Audit log" section={PATH} session={c.var.session}>
        {listed.ok || listed.status !== 403 ? (
          <search>
            {/* autocomplete off: Back restored the filters last chosen, not the address's. */}
            <form method="get" action={PATH} class="filters" autocomplete="off">
              <Field
                label="Action"
                name="action"
                value={page.action ?? ""}
                options={[
                  { value: "", label: "Any action" },
                  ...AUDIT_ACTIONS.map((a) => ({ value: a, label: a })),
                ]}
              />
              <Field label="Actor id" name="actor" value={page.actor} hint="usr_… or sa_…" />
              <Field
                label="Outcome"
                name="outcome"
                value={page.outcome ?? ""}
                options={[
                  { value: "", label: "Any outcome" },
                  { value: "success", label: "success" },
                  { value: "failure", label: "failure" },
                ]}
              />
              <Field
                label="From (UTC)"
                name="from"
                type="datetime-local"
                step="any"
                value={fieldValue(page.from)}
              />
              <Field
                label="To (UTC)"
                name="to"
                type="datetime-local"
                step="any"
                value={fieldValue(page.to)}
              />
              <button type="submit">Filter</button>
            </form>
          </search>
        ) : null}
        {listed.ok ? (
          <>
            <p class="actions">
              <a class="button secondary" href={exportLink("csv")} download>
                Export CSV
              </a>
              <a class="button secondary" href={exportLink("ndjson")} download>
                Export NDJSON
              </a>
              <span class="muted">{`Kept ${listed.data.retentionDays} days on this project's plan.`}</span>
            </p>
            <Table
              label="Audit log entries"
              head={["Time", "Action", "Outcome", "Actor", "Target", "Details"]}
            >
              {listed.data.logs.length === 0 ? (
                <EmptyRow span={6}>No entries match.</EmptyRow>
              ) : (
                listed.data.logs.map((e) => (
                  <tr>
                    <td>
                      <Time at={e.timestamp} />
                    </td>
                    <td class="mono">{e.action}</td>
                    <td>
                      <Status value={e.outcome} />
                    </td>
                    <td class="name">
                      {e.actor.name}{" "}
                      <span class="muted">{`(${e.actor.type === "user" ? "user" : "service account"})`}</span>
                      {/* Its id, which the Actor filter takes: a link to its entries. */}
                      <div class="hint mono">
                        <a
                          href={`/dashboard/audit-log?${byActor(page, e.actor.id)}`}
                          title={`Entries by ${e.actor.name}`}
                        >
                          {e.actor.id}
                        </a>
                      </div>
                    </td>
                    <td class="name">
                      <code>{`${e.target.type}: ${e.target.id}`}</code>
                    </td>
                    <Details entry={e} />
                  </tr>
                ))
              )}
            </Table>
            <Pager
              path={PATH}
              query={page}
              next={listed.data.nextPageToken}
              first={Boolean(query.cursor)}
            />
          </>
        ) : (
          <Notice kind="error">
            {listed.status === 403
              ? `The audit log is for the project's owners: ${listed.message}.`
              : listed.message}
          </Notice>
        )}
      </Page>,
    );
  });

  // The API's export, streamed through as it comes (every page of the filter). Its times are
  // the page's: a `datetime-local` value is UTC here too (a link edited by hand was the API's 400).
  dash.get("/audit-log/export", async (c) => {
    const query = new URLSearchParams(
      [...new URL(c.req.url).searchParams].map(([name, value]) => [
        name,
        name === "from" || name === "to" ? rfc3339(value.trim()) : value,
      ]),
    );
    const res = await c.var.api.raw(`/audit-log/export?${query}`);
    if (!res.ok) {
      const body = (await res.json().catch(() => ({}))) as { message?: string };
      return c.html(
        <Page title="Audit log export" section={PATH} session={c.var.session}>
          <Notice kind="error">{body.message ?? `the export failed (${res.status})`}</Notice>
        </Page>,
        res.status === 403 ? 403 : 400,
      );
    }
    const headers = new Headers();
    for (const name of ["content-type", "content-disposition"]) {
      const value = res.headers.get(name);
      if (value) headers.set(name, value);
    }
    headers.set("cache-control", "no-store");
    return new Response(res.body, { status: 200, headers });
  });
}
