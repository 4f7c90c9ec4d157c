/**
 * A run's moves as writes to its row: started, ended (with its delivery body built, or its
 * webhook dropped). What follows a move — the delivery, the runs index, the alarm — is the
 * shard's to do; these say what is due.
 */

import type { HostRunState } from "../../common/protocol/host.ts";
import { deliveryBody } from "./outcome.ts";
import type { HookColumns, RowChanges, RunRow } from "./rows.ts";
import { RETAIN_MS, type RunStore } from "./store.ts";
import type { Outcome, WebhookRequest } from "./types.ts";

/** The host took a queued run: it runs, its payload goes, the watchdog is due at `checkAt`. */
export function markStarted(store: RunStore, row: RunRow, hostRun: HostRunState, checkAt: number) {
  store.update(
    row.id,
    {
      status: "running",
      started_at: hostRun.startedAt ?? Date.now(),
      deadline_at: hostRun.deadlineAt ?? null,
      host_misses: 0,
      due_at: checkAt,
    },
    true,
  );
}

/**
 * How long a cancelled run ran: from its start to its cancel (`finishedAt`); null for one
 * cancelled before it started, which never ran.
 */
export function cancelledRunTime(startedAt: number | null | undefined, finishedAt: number) {
  return startedAt == null ? null : Math.max(0, finishedAt - startedAt);
}

/**
 * Ends the run with `outcome`. With `deliver` and a webhook, the delivery body is stored and
 * the delivery is due now (true is returned: start it); otherwise the webhook (if any) is
 * dropped with its secret and the row is kept until `RETAIN_MS` after the end. `byHost`: the
 * host's report that ended it. A run cancelled once started ran until then: its `run_time_ms`.
 */
export function markEnded(
  store: RunStore,
  row: RunRow,
  outcome: Outcome | { status: "cancelled" },
  deliver: boolean,
  byHost?: HostRunState,
): boolean {
  const finishedAt = byHost?.finishedAt ?? Date.now();
  const startedAt = row.started_at ?? byHost?.startedAt;
  const ranFor =
    outcome.status === "cancelled"
      ? (byHost?.runTimeMs ?? cancelledRunTime(startedAt, finishedAt))
      : outcome.run_time_ms;
  const ended: RowChanges = {
    status: outcome.status,
    finished_at: finishedAt,
    host_misses: 0,
    // An async run's end, and a webhook's state, go to the runs index from the shard.
    indexed: row.async === 1 || row.hook_state !== null ? 0 : 1,
    ...(row.started_at === null && byHost?.startedAt ? { started_at: byHost.startedAt } : {}),
    ...(ranFor !== null ? { run_time_ms: ranFor } : {}),
    ...(outcome.status === "failure" ? { error: outcome.error.message } : {}),
    ...("status_code" in outcome && outcome.status_code !== undefined
      ? { status_code: outcome.status_code }
      : {}),
  };
  if (row.hook_state === "pending" && deliver && outcome.status !== "cancelled") {
    const body = deliveryBody(row.id, outcome, new Date(finishedAt).toISOString());
    store.update(row.id, { ...ended, due_at: Date.now() }, true);
    store.hooks.setBody(row.id, body);
    return true;
  }
  // Nothing sent: the run was cancelled (no delivery is made), or its delivery is given up.
  const dropped = outcome.status === "cancelled" ? ("cancelled" as const) : ("failed" as const);
  const hook = row.hook_state === "pending" ? { hook_state: dropped } : {};
  store.update(row.id, { ...ended, ...hook, due_at: finishedAt + RETAIN_MS }, true);
  if (row.hook_state !== null) store.hooks.close(row.id);
  return false;
}

/** The columns a row keeps of `webhook`. */
export function hookOf(webhook: WebhookRequest): HookColumns {
  const { origin, pathname } = new URL(webhook.url);
  return {
    // Scheme, host and path: the query may hold credentials, it is never shown.
    target: `${origin}${pathname}`,
    signed: webhook.secret !== undefined,
    url: webhook.url,
    ...(webhook.secret !== undefined ? { secret: webhook.secret } : {}),
  };
}
