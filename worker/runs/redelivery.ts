/**
 * A finished run's webhook sent again (`POST …/runs/{run_id}/deliveries`): to its first target
 * or to a new one, with the first delivery's body (kept sealed, seal.ts) and the same
 * `X-Request-Id`, signed when this request brings a secret. It is a new delivery under the
 * spec's retry table; the ones before stay on the run's view (`webhook.earlier`).
 */
import { isEnded } from "../../common/protocol/runs.ts";
import type { Env } from "../env.ts";
import { refusal } from "./refusal.ts";
import type { DeliverySeries } from "./rows.ts";
import { unseal } from "./seal.ts";
import type { RunStore } from "./store.ts";
import { hookOf } from "./transitions.ts";
import type { Refusal } from "./types.ts";
import { attemptsOf } from "./view.ts";

/** Deliveries of one run, the first included (its row keeps each one's attempts). */
const MAX_DELIVERIES = 100;

/** Where a redelivery goes: a new target (checked like the first) and the secret that signs it. */
export interface Redelivery {
  url?: string;
  secret?: string;
}

/**
 * Opens a new delivery of `runId`, due now (undefined), or says why not: no such run (null), a
 * run not ended, without a webhook, or with a delivery still in progress (409).
 */
export async function reopenDelivery(
  store: RunStore,
  env: Env,
  runId: string,
  to: Redelivery,
): Promise<Refusal | null | undefined> {
  const row = store.get(runId);
  if (!row) return null;
  if (!isEnded(row.status))
    return refusal(409, `run '${runId}' has not ended: its webhook is sent once it ends`);
  if (row.hook_state === null)
    return refusal(409, `run '${runId}' had no webhook: there is no delivery to send again`);
  const sealed = store.hooks.sealed(runId);
  const first = sealed && (await unseal(env, runId, sealed));
  // Read again: another redelivery may have begun while the seal was opened.
  const now = store.get(runId);
  if (now?.hook_state === "pending")
    return refusal(409, `a delivery of run '${runId}' is in progress: try again once it ends`);
  if (!now || now.hook_state === null || !first)
    return refusal(
      409,
      `run '${runId}' has no delivery to send again (it was cancelled before it ended, or its delivery is no longer kept)`,
    );
  const history = now.hook_history ? (JSON.parse(now.hook_history) as DeliverySeries[]) : [];
  if (history.length + 1 >= MAX_DELIVERIES)
    return refusal(409, `run '${runId}' was delivered ${MAX_DELIVERIES} times: no more`);
  history.push({
    delivery: history.length + 1,
    target: now.hook_target ?? "",
    signed: now.hook_signed === 1,
    state: now.hook_state,
    attempts: attemptsOf(now),
  });
  const hook = hookOf({ url: to.url ?? first.url, ...(to.secret ? { secret: to.secret } : {}) });
  store.hooks.reopen(runId, { url: hook.url, secret: hook.secret ?? null, body: first.body });
  store.update(runId, {
    hook_history: JSON.stringify(history),
    hook_target: hook.target,
    hook_signed: Number(hook.signed),
    hook_state: "pending",
    hook_attempts: "[]",
    due_at: Date.now(),
    indexed: 0,
  });
  return undefined;
}
