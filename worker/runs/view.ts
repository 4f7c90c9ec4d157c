/** What a caller is shown of a run's row, and its delivery attempts as stored. */

import type { RunView } from "../../common/protocol/run-view.ts";
import type { DeliveryAttempt } from "../webhooks/deliver.ts";
import type { DeliverySeries, RunRow } from "./rows.ts";

/** The delivery attempts on the row; the one being sent (deliveries.ts) only with `sending`. */
export function attemptsOf(row: RunRow, sending = false): DeliveryAttempt[] {
  const attempts = row.hook_attempts ? (JSON.parse(row.hook_attempts) as DeliveryAttempt[]) : [];
  return sending ? attempts : attempts.filter((a) => !a.sending);
}

const time = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** The caller's view of a row: never the payload, the secret, the body or the result. */
export function runView(row: RunRow): RunView {
  return {
    run_id: row.id,
    project: row.project,
    app: row.app,
    function: row.fn,
    async: row.async === 1,
    status: row.status,
    created_at: time(row.created_at) as string,
    started_at: time(row.started_at),
    finished_at: time(row.finished_at),
    run_time_ms: row.run_time_ms,
    host: row.host_id,
    ...(row.status_code !== null ? { status_code: row.status_code } : {}),
    ...(row.error ? { error: { message: row.error } } : {}),
    ...(row.hook_state
      ? {
          webhook: {
            target: row.hook_target ?? "",
            signed: row.hook_signed === 1,
            state: row.hook_state,
            attempts: attemptsOf(row).map((a) => ({ ...a, at: time(a.at) as string })),
            ...earlier(row),
          },
        }
      : {}),
  };
}

/** A run sent again: the number of the delivery shown, and the ones before it. */
function earlier(row: RunRow) {
  if (!row.hook_history) return {};
  const history = JSON.parse(row.hook_history) as DeliverySeries[];
  return {
    delivery: history.length + 1,
    earlier: history.map((d) => ({
      ...d,
      attempts: d.attempts.map((a) => ({ ...a, at: time(a.at) as string })),
    })),
  };
}
