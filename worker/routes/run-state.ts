/**
 * `GET /v4/{project}/{app}/runs/{run_id}`: any run's state — from its shard of the run store
 * when it has a row there (async runs and runs with a webhook), else from the runs index; it
 * takes no query parameters.
 * `DELETE` cancels a queued or running async run (`?onlyIfQueued=true`: only a queued one); `POST …/deliveries` sends an ended run's
 * webhook again. The caller and the app are checked by the `caller` middleware, as for a run
 * call; a run of a deleted app can still be read (not cancelled nor sent again).
 */
import type { Context } from "hono";
import { RUN_ID_SOURCE } from "../../common/ids.ts";
import { isEnded } from "../../common/protocol/runs.ts";
import type { WorkerEnv } from "../env.ts";
import { RunApiError } from "../errors.ts";
import { indexedRun } from "../indexed-run.ts";
import { flagOf, refuseUnknownQuery, webhookOf, webhookSecretOf } from "../run-call.ts";
import { viewOrThrow } from "../runs/refusal.ts";
import { existingShardFor } from "../runs/shards.ts";
import { readCapped } from "../streams.ts";

/** Other `runs/…` paths stay a custom app's own. */
export const RUN_PATH = `/v4/:project/:app/runs/:runId{${RUN_ID_SOURCE}}`;
export const DELIVERIES_PATH = `${RUN_PATH}/deliveries`;

type RunContext = Context<WorkerEnv, typeof RUN_PATH | typeof DELIVERIES_PATH>;

/** The run as its shard holds it (null: not there), and the 404 for a run of another app. */
async function lookUp(c: RunContext) {
  const { project, app, runId } = c.req.param();
  const shard = existingShardFor(c.env, project, app, runId);
  // Reading an unknown id writes nothing; the shard holds only its app's runs.
  const found = (await shard?.view(runId)) ?? null;
  const notFound = new RunApiError(
    404,
    `no run '${runId}' of app '${app}' in project '${project}' (a sync run without a webhook is found once it has been on its replica for a second, or has answered)`,
  );
  if (found && (found.app !== app || found.project !== project)) throw notFound;
  return { shard, found, notFound };
}

export async function viewRun(c: RunContext) {
  const { project, app, runId } = c.req.param();
  // `?wait=1` and the like were ignored: the caller read a state it thought was waited for.
  refuseUnknownQuery(
    c,
    [],
    "GET of a run takes no query parameters; it answers the run's state as it is now (ask again until it has ended)",
  );
  if (c.var.appGone !== undefined) return c.json(await runOfDeletedApp(c, c.var.appGone), 200);
  const { found, notFound } = await lookUp(c);
  const view = found ?? (await indexedRun(c.env, c.var.caller.token, project, runId));
  if (!view || view.app !== app) throw notFound;
  return c.json(view, 200);
}

export async function cancelRun(c: RunContext) {
  const { runId } = c.req.param();
  refuseUnknownQuery(c, ["onlyIfQueued"], "DELETE of a run takes onlyIfQueued");
  const onlyIfQueued = flagOf(c, "onlyIfQueued");
  // An async run no longer in its shard ended more than the retention period ago.
  const { shard, notFound } = await shardHolding(c, (indexed) =>
    indexed.async
      ? (notHeld(runId, indexed.status) ?? `run '${runId}' has already ended: ${indexed.status}`)
      : "only async runs can be cancelled",
  );
  const cancelled = await shard.cancel(runId, c.var.app.id, onlyIfQueued);
  if (!cancelled) throw notFound;
  return c.json(viewOrThrow(cancelled), 200);
}

/**
 * Sends the run's webhook again: to `?webhookEndpoint=` (checked like a run call's) or to its
 * first target, signed when `X-Webhook-Secret` is sent. 202 with the run's view.
 */
export async function redeliverRun(c: RunContext) {
  const { runId } = c.req.param();
  refuseUnknownQuery(c, ["webhookEndpoint"], `${REDELIVERY} takes webhookEndpoint`);
  await takesNoBody(c);
  const secret = webhookSecretOf(c);
  const to = webhookOf(c) ?? (secret ? { secret } : {});
  const { shard, notFound } = await shardHolding(c, (indexed) =>
    indexed.async
      ? (notHeld(runId, indexed.status) ??
        `run '${runId}' ended more than 7 days ago: its delivery is no longer kept`)
      : `run '${runId}' had no webhook: there is no delivery to send again`,
  );
  const view = await shard.redeliver(runId, to, c.var.app.id);
  if (!view) throw notFound;
  return c.json(viewOrThrow(view), 202);
}

const REDELIVERY = "POST …/deliveries";

/**
 * A redelivery's options are its query and headers; a body, if any, is empty or `{}`. One with
 * fields is refused naming them (400), before the run is looked at: `{"urll": …}`, or a secret
 * sent in the body, was ignored and the webhook sent again to the first target, unsigned.
 */
async function takesNoBody(c: RunContext): Promise<void> {
  const { body } = c.req.raw;
  if (!body) return;
  const read = await readCapped(body, 64 * 1024);
  if (!read) throw new RunApiError(413, `${REDELIVERY} takes no body; this one is over 64 KiB`);
  const text = new TextDecoder().decode(read).trim();
  if (text === "") return;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (!parsed || typeof parsed !== "object" || Array.isArray(parsed))
    throw new RunApiError(
      400,
      `${REDELIVERY} takes no body: send none or {} (another target goes in ?webhookEndpoint=, a secret in the X-Webhook-Secret header)`,
    );
  const fields = Object.keys(parsed);
  if (fields.length === 0) return;
  const named = fields.slice(0, 5).map((f) => `'${f.slice(0, 40)}'`);
  if (fields.length > 5) named.push(`${fields.length - 5} more`);
  throw new RunApiError(
    400,
    `${REDELIVERY} takes no body fields (got ${named.join(", ")}): give another target as ?webhookEndpoint=<url-encoded URL> and a secret as the X-Webhook-Secret header`,
  );
}

/**
 * A run of an app deleted since: the runs index keeps it, and answers only a caller who may read
 * the project's runs; its shard, if it still holds it, has the whole view (error, webhook). A run
 * the index does not have gets the app's 404 (`gone`), as before the app was deleted.
 */
async function runOfDeletedApp(c: RunContext, gone: string) {
  const { project, app, runId } = c.req.param();
  const indexed = await indexedRun(c.env, c.var.caller.token, project, runId);
  if (!indexed || indexed.app !== app) throw new RunApiError(404, gone);
  const { found } = await lookUp(c);
  return found ?? indexed;
}

/**
 * Why an async run the runs index has as queued or running cannot change: no shard holds it. A
 * shard keeps a run until 7 days after it ended, so only a run store replaced since holds none:
 * the first one's runs (one object per run) were not carried over to its shards.
 */
function notHeld(runId: string, status: string): string | undefined {
  if (isEnded(status)) return undefined;
  return `run '${runId}' is not in the run store, which an older checkout's runs were not carried over to (the runs index last had it ${status}): it can no longer change`;
}

/**
 * The shard holding the run, to change it; a run that only the runs index knows cannot change:
 * 409 with `why` (404 when nobody knows it).
 */
async function shardHolding(
  c: RunContext,
  why: (indexed: { async: boolean; status: string }) => string,
) {
  const { project, app, runId } = c.req.param();
  const { shard, found, notFound } = await lookUp(c);
  if (shard && found) return { shard, notFound };
  const indexed = await indexedRun(c.env, c.var.caller.token, project, runId);
  if (!indexed || indexed.app !== app) throw notFound;
  throw new RunApiError(409, why(indexed));
}
