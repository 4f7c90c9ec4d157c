/**
 * `/dashboard/audit-log` (owners; others are told why not): the API's filters `action`,
 * `actor`, `outcome`, `from`, `to` are the page's own query, so a filtered view is a permalink;
 * a value the API would not take is named and left out, the others kept (audit-filters.ts);
 * pages follow the API's tokens; the current filter exports as CSV or NDJSON (the API's
 * export, streamed through).
 */
import type { Hono } from "hono";
import { AUDIT_ACTIONS } from "../../audit/actions.ts";
import type { DashEnv } from "../api.ts";
import { apiTime, byActor, fieldValue, filtersOf } from "../audit-filters.ts";
import { Page } from "../layout.tsx";
import { EmptyRow, Field, Notice, Pager, Status, Table, Time } from "../ui.tsx";

const PATH = "/dashboard/audit-log";

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
    const { page, api, problems, leftOut } = filtersOf(query);
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
              {/* Seconds as the rows show them (step 0.001: with "any", Chrome had no seconds
                  to type, and a row's 19:35:18 typed in became 07:35 AM). */}
              <Field
                label="From (UTC)"
                name="from"
                type="datetime-local"
                step="0.001"
                value={fieldValue(page.from)}
              />
              <Field
                label="To (UTC)"
                name="to"
                type="datetime-local"
                step="0.001"
                value={fieldValue(page.to)}
              />
              <button type="submit">Filter</button>
            </form>
          </search>
        ) : null}
        {/* Said as the runs page says its own: each value left out, what it takes, the one meant. */}
        {problems.length > 0 && (listed.ok || listed.status !== 403) ? (
          <Notice kind="error">
            {`${problems.join("; ")}: ${leftOut === 1 ? "that filter is" : "those filters are"} left out.`}
          </Notice>
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
              head={["Time (UTC)", "Action", "Outcome", "Actor", "Target", "Details"]}
            >
              {listed.data.logs.length === 0 ? (
                <EmptyRow span={6}>No entries match.</EmptyRow>
              ) : (
                listed.data.logs.map((e) => (
                  <tr>
                    <td>
                      <Time at={e.timestamp} utc />
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
        name === "from" || name === "to" ? apiTime(name, value.trim()) : value,
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
