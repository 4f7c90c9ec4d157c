/**
 * A run's webhook delivery, driven from its shard: attempts as the spec's retry table says
 * (webhooks/deliver.ts), each recorded on the run's row as it ends. A pause before the next
 * attempt is the row's `due_at`, so the shard's alarm resumes the delivery even after an
 * eviction; an attempt cut short by one is sent again (deliveries are at least once).
 */
import type { Env } from "../env.ts";
import {
  ATTEMPT_TIMEOUT_MS,
  attemptDelivery,
  type DeliveryAttempt,
  deliveryState,
  nextAttemptAt,
  RETRY_DELAYS_MS,
} from "../webhooks/deliver.ts";
import { seal } from "./seal.ts";
import { RETAIN_MS, type RunStore } from "./store.ts";
import type { TargetGate } from "./target-gate.ts";
import { attemptsOf } from "./view.ts";

/** The pauses between attempts (WEBHOOK_RETRY_DELAYS_MS overrides them in tests). */
function retryDelays(env: Env): readonly number[] {
  const configured = env.WEBHOOK_RETRY_DELAYS_MS?.split(",").map(Number);
  return configured?.every((n) => Number.isFinite(n) && n >= 0) ? configured : RETRY_DELAYS_MS;
}

/**
 * Sends the attempts of run `id` that are due, one after another, until the delivery ends or
 * must wait (then its `due_at` says until when, and `schedule` moves the alarm). An attempt that
 * is due waits for a place at its receiver (`gate`, target-gate.ts) before it is sent.
 */
export async function deliverDue(
  store: RunStore,
  id: string,
  env: Env,
  schedule: () => void,
  gate: TargetGate,
): Promise<void> {
  const delays = retryDelays(env);
  const timeoutMs = Number(env.WEBHOOK_TIMEOUT_MS) || ATTEMPT_TIMEOUT_MS;
  for (;;) {
    const row = store.get(id);
    const delivery = store.hooks.pending(id);
    if (row?.hook_state !== "pending" || !delivery) return;
    const attempts = attemptsOf(row);
    const due = nextAttemptAt(attempts, delays);
    if (due === undefined) return;
    if (due > Date.now()) {
      store.update(id, { due_at: due });
      return;
    }
    const release = await gate.enter(delivery.url);
    let attempt: DeliveryAttempt;
    try {
      // Should this instance go away during the attempt, the alarm sends it again.
      store.update(id, { due_at: Date.now() + timeoutMs + 2_000 });
      schedule();
      attempt = await attemptDelivery(
        {
          url: delivery.url,
          runId: id,
          body: delivery.body,
          secret: delivery.secret ?? undefined,
          brand: env.RUNLET_BRAND,
        },
        attempts.length + 1,
        { timeoutMs },
      );
    } finally {
      release();
    }
    attempts.push(attempt);
    const state = deliveryState(attempts);
    if (state === "pending") {
      store.update(id, { hook_attempts: JSON.stringify(attempts) });
      continue;
    }
    if (state === "failed") {
      console.error(
        `[runs] webhook delivery of ${id} failed after ${attempts.length} attempt(s): ${attempt.status ?? attempt.error}`,
      );
    }
    // The first delivery's target and body stay, sealed, for redeliveries (seal.ts); a run sent
    // again has a history of deliveries, and its first one sealed already.
    const first = row.hook_history === null;
    const sealed = first ? await seal(env, id, { url: delivery.url, body: delivery.body }) : null;
    store.update(id, {
      hook_attempts: JSON.stringify(attempts),
      hook_state: state,
      indexed: 0, // the runs index hears how the delivery ended
      due_at: (row.finished_at ?? Date.now()) + RETAIN_MS,
    });
    store.hooks.close(id, sealed);
    return;
  }
}
