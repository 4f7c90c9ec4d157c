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
  sendingAttempt,
} from "../webhooks/deliver.ts";
import type { RunRow } from "./rows.ts";
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
    // An attempt still marked as being sent was cut short by the end of an earlier instance
    // (this one sends a run's attempts one at a time): it stays as that attempt's record.
    const attempts = attemptsOf(row, true).map(({ sending: _, ...attempt }) => attempt);
    const due = nextAttemptAt(attempts, delays);
    if (due === undefined) return finish(store, env, row, delivery, attempts); // the last, cut short
    if (due > Date.now()) {
      store.update(id, { due_at: due, hook_attempts: JSON.stringify(attempts) });
      return;
    }
    const release = await gate.enter(delivery.url);
    let attempt: DeliveryAttempt;
    try {
      // Recorded before it is sent: should this instance go away meanwhile, the record stays
      // and the alarm goes on from it, so a crash never adds a fourth attempt.
      const sending = sendingAttempt(attempts.length + 1, Date.now());
      const hook_attempts = JSON.stringify([...attempts, sending]);
      store.update(id, { due_at: Date.now() + timeoutMs + 2_000, hook_attempts });
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
    if (deliveryState(attempts) !== "pending") return finish(store, env, row, delivery, attempts);
    store.update(id, { hook_attempts: JSON.stringify(attempts) });
  }
}

/** The delivery of `row` is over after `attempts`: delivered or failed, recorded and closed. */
async function finish(
  store: RunStore,
  env: Env,
  row: RunRow,
  delivery: { url: string; body: string },
  attempts: DeliveryAttempt[],
): Promise<void> {
  const state = deliveryState(attempts);
  const last = attempts.at(-1);
  if (state === "failed") {
    console.error(
      `[runs] webhook delivery of ${row.id} failed after ${attempts.length} attempt(s): ${last?.status ?? last?.error}`,
    );
  }
  // The first delivery's target and body stay, sealed, for redeliveries (seal.ts); a run sent
  // again has a history of deliveries, and its first one sealed already.
  const first = row.hook_history === null;
  const sealed = first ? await seal(env, row.id, { url: delivery.url, body: delivery.body }) : null;
  store.update(row.id, {
    hook_attempts: JSON.stringify(attempts),
    hook_state: state,
    indexed: 0, // the runs index hears how the delivery ended
    due_at: (row.finished_at ?? Date.now()) + RETAIN_MS,
  });
  store.hooks.close(row.id, sealed);
}
