/**
 * `/dashboard/runs`: the runs index. Its filters (app, status, mode) and its page are the
 * address's query, so a view is a permalink; the first page refreshes itself every few seconds
 * (the script), later pages stay still while the user reads them.
 */
import type { Hono } from "hono";
import type { Child } from "hono/jsx";
import type { z } from "zod";
import { didYouMean } from "../../../common/closest.ts";
import { RUN_ID } from "../../../common/ids.ts";
import { answeredNote, RUN_STATUS_ALIASES, RUN_STATUSES } from "../../../common/protocol/runs.ts";
import type { runSchema } from "../../routes/runs-list.ts";
import type { DashEnv } from "../api.ts";
import { Page } from "../layout.tsx";
import { Duration, EmptyRow, Field, Notice, Pager, Status, Table, Time } from "../ui.tsx";

/** A run as the runs API lists it. */
export type RunItem = z.infer<typeof runSchema>;

const REFRESH_MS = 3000;

export function WebhookResult({ webhook }: { webhook: RunItem["webhook"] }) {
  if (!webhook) return <span class="muted">—</span>;
  const n = webhook.attempts ?? 0;
  return (
    <span>
      <Status value={webhook.state} />
      {n > 0 ? <span class="muted">{` (${n} attempt${n === 1 ? "" : "s"})`}</span> : null}
    </span>
  );
}

export function Mode({ async }: { async: boolean }) {
  return async ? <span class="badge badge-async">async</span> : <span class="muted">sync</span>;
}

/** The command that makes a run of `app` (any app of the project when not given). */
export function FirstRun({ project, app }: { project: string; app?: string }) {
  return (
    <>
      No runs yet: call {app ? "it" : "an app"},{" "}
      <code>{`RUNLET_PROJECT=${project} npx runlet run ${app ?? "APP"}`}</code>, and its runs show
      here as they come, async ones too.
    </>
  );
}

export function RunRows({
  runs,
  filtered,
  none,
}: {
  runs: RunItem[];
  filtered: boolean;
  /** What an unfiltered empty list says: how to make a first run. */
  none: Child;
}) {
  if (runs.length === 0) return <EmptyRow span={8}>{filtered ? "No runs match." : none}</EmptyRow>;
  return (
    <>
      {runs.map((r) => (
        <tr>
          <td>
            <a class="mono" href={`/dashboard/runs/${r.id}`}>
              {r.id}
            </a>
          </td>
          {/* An app's name (up to 63 characters) and a custom app's method and path wrap: on one
              line, a long one pushed the Webhook column past a 1280 px window. */}
          <td class="name">{r.app}</td>
          <td class="name mono">{r.function}</td>
          <td>
            <Mode async={r.async} />
          </td>
          <td>
            <Status value={r.status} />
            {answeredNote(r.statusCode) ? (
              <span class="muted">{answeredNote(r.statusCode)}</span>
            ) : null}
          </td>
          <td>
            <Time at={r.createdAt} />
          </td>
          <td>
            <Duration ms={r.runTimeMs} />
          </td>
          <td>
            <WebhookResult webhook={r.webhook} />
          </td>
        </tr>
      ))}
    </>
  );
}

export function registerRuns(dash: Hono<DashEnv>) {
  dash.get("/runs", async (c) => {
    const q = c.req.query();
    const jump = q.run?.trim();
    // Ids are lower case; one typed or pasted in upper case is the same id.
    if (jump && RUN_ID.test(jump.toLowerCase()))
      return c.redirect(`/dashboard/runs/${jump.toLowerCase()}`, 303);
    const filters = {
      app: q.app || undefined,
      status: (RUN_STATUSES as readonly string[]).includes(q.status ?? "") ? q.status : undefined,
      mode: q.mode === "async" || q.mode === "sync" ? q.mode : undefined,
    };
    // A filter the page does not know (an edited address) is said, not silently dropped.
    const unknown = [
      q.status && !filters.status
        ? `status '${q.status}' is not one of ${RUN_STATUSES.join(", ")}${didYouMean(q.status, RUN_STATUSES, RUN_STATUS_ALIASES)}`
        : undefined,
      q.mode && !filters.mode ? `mode '${q.mode}' is not async or sync` : undefined,
    ].filter((problem) => problem !== undefined);
    const params = new URLSearchParams({ limit: "50" });
    if (filters.app) params.set("app", filters.app);
    if (filters.status) params.set("status", filters.status);
    if (filters.mode) params.set("async", String(filters.mode === "async"));
    if (q.cursor) params.set("nextToken", q.cursor);
    const [listed, apps] = await Promise.all([
      c.var.api.project<{ runs: RunItem[]; nextPageToken?: string }>("GET", `/runs?${params}`),
      c.var.api.project<{ apps: Array<{ name: string }> }>("GET", "/apps"),
    ]);
    const appNames = apps.ok ? apps.data.apps.map((a) => a.name) : [];
    // An app deleted since (its runs are kept), or typed into the address: still the filter.
    const gone = filters.app && !appNames.includes(filters.app) ? [filters.app] : [];
    return c.html(
      <Page title="Runs" section="/dashboard/runs" session={c.var.session}>
        <search>
          {/* autocomplete off: Back to this page restored the filters last chosen over those its
              address has, and the whole list showed under "hello" and "failure". */}
          <form method="get" action="/dashboard/runs" class="filters" autocomplete="off">
            <Field
              label="App"
              name="app"
              value={filters.app ?? ""}
              options={[
                { value: "", label: "All apps" },
                ...appNames.map((n) => ({ value: n, label: n })),
                ...gone.map((n) => ({ value: n, label: `${n} (not deployed)` })),
              ]}
            />
            <Field
              label="Status"
              name="status"
              value={filters.status ?? ""}
              options={[
                { value: "", label: "Any status" },
                ...RUN_STATUSES.map((s) => ({ value: s, label: s })),
              ]}
            />
            <Field
              label="Mode"
              name="mode"
              value={filters.mode ?? ""}
              options={[
                { value: "", label: "Sync and async" },
                { value: "sync", label: "sync" },
                { value: "async", label: "async" },
              ]}
            />
            <button type="submit">Filter</button>
          </form>
        </search>
        <form method="get" action="/dashboard/runs" class="filters">
          <Field label="Go to run id" name="run" value={jump ?? ""} hint="run_…" />
          <button type="submit" class="secondary">
            Go
          </button>
        </form>
        {jump ? (
          <Notice kind="error">{`'${jump}' is not a run id (run_ and 26 letters or digits).`}</Notice>
        ) : null}
        {unknown.length > 0 ? (
          <Notice kind="error">{`${unknown.join("; ")}: that filter is left out.`}</Notice>
        ) : null}
        {listed.ok ? (
          <>
            <Table
              label="Runs"
              id="runs-rows"
              refresh={q.cursor ? undefined : REFRESH_MS}
              head={["Run", "App", "Function", "Mode", "Status", "Created", "Duration", "Webhook"]}
            >
              <RunRows
                runs={listed.data.runs}
                filtered={Boolean(filters.app || filters.status || filters.mode || q.cursor)}
                none={<FirstRun project={c.var.session.projectId} />}
              />
            </Table>
            <Pager
              path="/dashboard/runs"
              query={{ app: filters.app, status: filters.status, mode: filters.mode }}
              next={listed.data.nextPageToken}
              first={Boolean(q.cursor)}
            />
          </>
        ) : (
          <Notice kind="error">{listed.message}</Notice>
        )}
      </Page>,
    );
  });
}
