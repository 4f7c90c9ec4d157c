/**
 * Cancelling a run from its page (`/dashboard/runs/{run_id}`): asked on a confirmation page of
 * its own (`/dashboard/runs/{run_id}/cancel`) that names the run and says what follows, whose
 * form calls the run API (`DELETE /v4/{project}/{app}/runs/{run_id}`) and goes back to the
 * run's page (Post/Redirect/Get), which shows it cancelled, or the run API's refusal in its own
 * words. Its button had cancelled the run on one click.
 */
import type { Hono } from "hono";
import type { RunView } from "../../../common/protocol/run-view.ts";
import { isEnded } from "../../../common/protocol/runs.ts";
import type { DashEnv } from "../api.ts";
import { Page } from "../layout.tsx";
import { Notice } from "../ui.tsx";
import { pageOf, setCancelOutcome } from "./run-deliveries.tsx";
import type { RunItem } from "./runs.tsx";

export const cancelPath = (runId: string) => `${pageOf(runId)}/cancel`;

export function registerRunCancel(dash: Hono<DashEnv>) {
  dash.get("/runs/:runId/cancel", async (c) => {
    const runId = c.req.param("runId");
    const { api, session } = c.var;
    const indexed = await api.project<RunItem>("GET", `/runs/${encodeURIComponent(runId)}`);
    const item = indexed.ok ? indexed.data : undefined;
    // Not a run id (the API's 400) or no such run: no page there.
    const missing = !indexed.ok && (indexed.status === 404 || indexed.status === 400);
    // Its status now from the run API (the index hears of a change within moments).
    const record = item
      ? await api.runs<Pick<RunView, "status">>(
          "GET",
          `/v4/${session.projectId}/${item.app}/runs/${runId}`,
        )
      : undefined;
    const status = record?.ok ? record.data.status : item?.status;
    const back = <a href={pageOf(runId)}>Back to the run</a>;
    return c.html(
      <Page title="Cancel a run" section="/dashboard/runs" session={session}>
        {!item ? (
          <Notice kind="error">{indexed.ok ? "" : indexed.message}</Notice>
        ) : !item.async ? (
          <Notice kind="info">
            {`Run ${runId} is a sync run: only async runs can be cancelled.`} {back}
          </Notice>
        ) : status && isEnded(status) ? (
          <Notice kind="info">
            {`Run ${runId} has ended (${status}): there is nothing to cancel.`} {back}
          </Notice>
        ) : (
          <form method="post" action={cancelPath(runId)} class="stack">
            <p>
              Cancel run <code>{runId}</code> of <strong>{item.app}</strong> (
              <code>{item.function}</code>, {status ?? "queued"})? It ends <code>cancelled</code> at
              once: a queued run leaves the queue and never starts, a running one's{" "}
              <code>ctx.signal</code> aborts on its runtime host. Its webhook is not delivered. This
              cannot be undone: to have it run, call the function again.
            </p>
            <button type="submit" class="danger">
              Cancel run
            </button>
            <a href={pageOf(runId)}>Keep it running</a>
          </form>
        )}
      </Page>,
      missing ? 404 : 200,
    );
  });

  dash.post("/runs/:runId/cancel", async (c) => {
    const runId = c.req.param("runId");
    const { api, session } = c.var;
    const indexed = await api.project<RunItem>("GET", `/runs/${encodeURIComponent(runId)}`);
    const cancelled = indexed.ok
      ? await api.runs("DELETE", `/v4/${session.projectId}/${indexed.data.app}/runs/${runId}`)
      : indexed;
    setCancelOutcome(c, runId, cancelled.ok ? undefined : cancelled.message);
    return c.redirect(pageOf(runId), 303);
  });
}
