/**
 * `/dashboard/runs/{run_id}`: one run — its states on a timeline, timings, its error, its logs,
 * each webhook delivery and its attempts — and, while a queued or running async run, a Cancel
 * button, which asks first (run-cancel.tsx); once it has ended, a Resend button for its webhook (run-deliveries.tsx). The facts
 * come from the run API (the run's own record), the logs from the management API. A run whose
 * app was deleted is shown without either button: the run API refuses both with the app's 404
 * (or, once an app of the name was deployed again, with a 409: that app is another).
 */
import type { Hono } from "hono";
import type { Child } from "hono/jsx";
import { RUN_ID, timeOfId } from "../../../common/ids.ts";
import type { RunLogs } from "../../../common/protocol/host.ts";
import type { RunView } from "../../../common/protocol/run-view.ts";
import { isEnded } from "../../../common/protocol/runs.ts";
import type { DashCtx, DashEnv } from "../api.ts";
import { Page } from "../layout.tsx";
import { Definition, Duration, LogLines, Notice, Status, Time } from "../ui.tsx";
import { cancelPath, registerRunCancel } from "./run-cancel.tsx";
import {
  canResend,
  Deliveries,
  ResendForm,
  ResendNotice,
  registerResend,
  takeResendFlash,
} from "./run-deliveries.tsx";
import { Mode, type RunItem } from "./runs.tsx";

/** What the page shows of a run: its record from the run API, or what the index knows. */
type RunRecord = Pick<
  RunView,
  "status" | "created_at" | "started_at" | "finished_at" | "run_time_ms" | "error" | "webhook"
> &
  Partial<Pick<RunView, "status_code">>;

function Timeline({ run, async }: { run: RunRecord; async: boolean }) {
  const ended = isEnded(run.status);
  const steps: Array<[string, string | null]> = [
    ["Received", run.created_at],
    ...(async ? ([["Queued", run.created_at]] as Array<[string, string]>) : []),
    ["Started", run.started_at],
    [ended ? `Ended: ${run.status}` : "Ended", ended ? (run.finished_at ?? null) : null],
  ];
  const received = Date.parse(run.created_at);
  return (
    <ol class="timeline" aria-label="States">
      {steps.map(([label, at], i) => (
        <li class={at ? undefined : "off"}>
          <strong>{label}</strong> <Time at={at} />
          {at && i > 0 ? (
            <span class="muted">
              {" "}
              (+
              <Duration ms={Date.parse(at) - received} />)
            </span>
          ) : null}
        </li>
      ))}
    </ol>
  );
}

/** When an ended run started, from the index's end and run time (its own record is gone). */
function startedOf(item: RunItem): string | null {
  if (item.finishedAt === null || item.runTimeMs === null) return null;
  return new Date(Date.parse(item.finishedAt) - item.runTimeMs).toISOString();
}

/** How long a run id not in the index may be waited for, from the time in the id. */
const ARRIVAL_MS = 30_000;

/**
 * Whole seconds since `runId` was made, if that is recent enough for the runs index not to have
 * it yet (a run's shard reports it within moments of its 202); undefined otherwise.
 */
function secondsSinceAccepted(runId: string): number | undefined {
  const made = RUN_ID.test(runId) ? timeOfId(runId) : undefined;
  if (made === undefined) return undefined;
  const age = Date.now() - made;
  return age >= -5_000 && age < ARRIVAL_MS ? Math.max(0, Math.round(age / 1000)) : undefined;
}

async function runPage(c: DashCtx) {
  const runId = c.req.param("runId") ?? "";
  const { api, session } = c.var;
  const indexed = await api.project<RunItem>("GET", `/runs/${encodeURIComponent(runId)}`);
  if (!indexed.ok) {
    const arriving = indexed.status === 404 ? secondsSinceAccepted(runId) : undefined;
    return c.html(
      <Page title="Run" section="/dashboard/runs" session={session}>
        {arriving === undefined ? (
          <Notice kind="error">{indexed.message}</Notice>
        ) : (
          // Fetched again every second (assets.ts) until the page no longer has it: then the
          // run's page is loaded in its place.
          <div id="run-arrival" data-refresh="1000">
            <Notice kind="info">
              {`Run ${runId} was made ${arriving} s ago; the runs index has a run within a few seconds of its acceptance. This page shows it once it has.`}
            </Notice>
          </div>
        )}
      </Page>,
      // Not a run id (the API's 400) or no such run: no page there.
      indexed.status === 404 || indexed.status === 400 ? 404 : 200,
    );
  }
  const item = indexed.data;
  const resent = takeResendFlash(c, runId);
  const [record, logs, deployed] = await Promise.all([
    api.runs<RunRecord>("GET", `/v4/${session.projectId}/${item.app}/runs/${runId}`),
    api.project<RunLogs>("GET", `/runs/${runId}/logs`),
    api.project<{ createdAt: string }>("GET", `/apps/${encodeURIComponent(item.app)}`),
  ]);
  // The run API still shows a deleted app's runs, but cancels and redelivers none of them; an app
  // of the name made after the run is another app (the run API refuses its callers too).
  const replaced = deployed.ok && Date.parse(deployed.data.createdAt) > Date.parse(item.createdAt);
  const appGone = (!deployed.ok && deployed.status === 404) || replaced;
  const run: RunRecord = record.ok
    ? record.data
    : {
        status: item.status,
        created_at: item.createdAt,
        started_at: startedOf(item),
        finished_at: item.finishedAt,
        run_time_ms: item.runTimeMs,
        ...(item.error ? { error: item.error } : {}),
      };
  const live = !isEnded(run.status);
  // A delivery still being tried (after the run, or after Resend) is followed live too.
  const refresh = live || run.webhook?.state === "pending";
  return c.html(
    <Page title={`Run ${runId}`} section="/dashboard/runs" session={session}>
      {resent ? <ResendNotice flash={resent} /> : null}
      {record.ok ? null : (
        <Notice kind="warn">{`The run's own record could not be read: ${record.message}`}</Notice>
      )}
      {appGone ? (
        <Notice kind="info">
          {replaced
            ? `The app ${item.app} that this run was made for was deleted; the app deployed under its name since is another. The run is kept, but it cannot be cancelled or have its webhook sent again.`
            : `App ${item.app} was deleted: its runs are kept, but none can be cancelled or have its webhook sent again.`}
        </Notice>
      ) : null}
      <div id="run-live" data-refresh={refresh ? "2000" : undefined}>
        <Definition
          items={[
            [
              "App",
              appGone ? (
                `${item.app} (deleted)`
              ) : (
                <a href={`/dashboard/apps/${item.app}`}>{item.app}</a>
              ),
            ],
            ["Function", <code>{item.function}</code>],
            ["Mode", <Mode async={item.async} />],
            ["Status", <Status value={run.status} />],
            ["Run time", <Duration ms={run.run_time_ms} />],
            ...(run.status_code !== undefined
              ? ([["Answered", <code>{run.status_code}</code>]] as Array<[string, Child]>)
              : []),
          ]}
        />
        <Timeline run={run} async={item.async} />
        {item.async && live && !appGone ? (
          // Asked first, on a page of its own (run-cancel.tsx): the button had cancelled at once.
          <p class="actions">
            <a class="button danger" href={cancelPath(runId)}>
              Cancel run
            </a>
          </p>
        ) : null}
        {run.error ? (
          <>
            <h2>Error</h2>
            <pre class="logs" tabindex={0}>
              {run.error.message}
            </pre>
          </>
        ) : null}
        <h2>Webhook</h2>
        {run.webhook && canResend(run) && !appGone ? (
          <ResendForm
            runId={runId}
            webhook={run.webhook}
            endpoint={resent?.kind === "refused" ? resent.endpoint : undefined}
          />
        ) : null}
        {run.webhook ? <Deliveries webhook={run.webhook} /> : <p class="muted">No webhook.</p>}
        <h2>Logs</h2>
        {logs.ok ? (
          logs.data.lines.length === 0 ? (
            <p class="muted">The run wrote nothing.</p>
          ) : (
            <LogLines
              lines={logs.data.lines}
              dropped={logs.data.truncated ? "older lines were dropped" : undefined}
            />
          )
        ) : (
          <>
            <p class="muted">{logs.message}</p>
            {/* A custom app's requests, and a crash at start, write to its replicas' output. */}
            {appGone ? null : (
              <p>
                <a href={`/dashboard/apps/${item.app}/output`}>Output of {item.app}'s replicas</a>
              </p>
            )}
          </>
        )}
      </div>
    </Page>,
  );
}

export function registerRun(dash: Hono<DashEnv>) {
  dash.get("/runs/:runId", (c) => runPage(c));
  registerResend(dash);
  registerRunCancel(dash);
}
