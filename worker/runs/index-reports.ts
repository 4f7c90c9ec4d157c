/**
 * A shard tells the runs index (`POST {control plane}/internal/runs`) of its async runs as they
 * are accepted (`queued`) and as they end, and of any run's webhook delivery as it ends, gathered for a moment into one request; a run that
 * ended before its batch left is sent once, ended. A run's row says whether the index has its
 * state (`indexed`), so it survives a crash of anything until the index confirms it: an
 * instance that comes up with unconfirmed states sends them, and a batch the control plane
 * could not take is sent again, after a pause that grows to 30 s, by the shard's alarm.
 */
import { controlPlanePath } from "../../common/protocol/paths.ts";
import type { RunReportBatch } from "../../common/protocol/runs.ts";
import { controlPlaneFetch } from "../control-plane.ts";
import type { Env } from "../env.ts";
import type { RunStore } from "./store.ts";

/**
 * How long ends are gathered before they are sent, and the most sent at once: each shard sends
 * its own batches, and every request costs the control plane a write, so they are few.
 */
const GATHER_MS = 200;
const BATCH = 500;
const RETRY_MIN_MS = 1_000;
const RETRY_MAX_MS = 30_000;

/** The attempts made, the one being sent not yet among them (deliveries.ts). */
function attemptCount(attempts: string | null): number {
  return attempts
    ? (JSON.parse(attempts) as { sending?: true }[]).filter((a) => !a.sending).length
    : 0;
}

export class IndexReports {
  #timer: ReturnType<typeof setTimeout> | undefined;
  #sending = false;
  /** Asked to send while a batch was on its way: what changed meanwhile goes once it is back. */
  #again = false;
  #retryMs = 0;
  /** When to send again after a batch the control plane could not take. */
  #retryAt: number | undefined;

  /** `schedule` moves the shard's alarm (to `retryAt` after a failed batch). */
  constructor(
    private readonly store: RunStore,
    private readonly env: Env,
    private readonly schedule: () => void,
  ) {}

  /** A run was accepted or ended: send it with the others of the next few milliseconds. */
  soon(): void {
    if (this.#retryAt === undefined) this.#timer ??= setTimeout(() => void this.send(), GATHER_MS);
  }

  /** When the alarm must send again, if a batch failed. */
  retryAt(): number | undefined {
    return this.#retryAt;
  }

  /** Sends every unconfirmed end, a batch at a time; on a failure, waits for `retryAt`. */
  async send(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#sending) {
      this.#again = true;
      return;
    }
    this.#sending = true;
    this.#again = false;
    this.#retryAt = undefined;
    try {
      for (let rows = this.store.unindexed(BATCH); rows.length > 0; ) {
        const runs = rows.map((r): RunReportBatch["runs"][number] => ({
          id: r.id,
          projectId: r.project,
          app: r.app,
          function: r.fn,
          async: r.async === 1,
          status: r.status,
          createdAt: r.created_at,
          finishedAt: r.finished_at,
          runTimeMs: r.run_time_ms,
          ...(r.error ? { error: r.error } : {}),
          // A custom app's run ended with its answer's status, as the host reports a sync run's.
          ...(r.status_code !== null ? { statusCode: r.status_code } : {}),
          ...(r.host_id ? { host: r.host_id } : {}),
          ...(r.hook_state
            ? { webhook: { state: r.hook_state, attempts: attemptCount(r.hook_attempts) } }
            : {}),
        }));
        const sent = await this.#post(runs);
        if (sent === "later") {
          this.#retryMs = Math.min(Math.max(this.#retryMs * 2, RETRY_MIN_MS), RETRY_MAX_MS);
          this.#retryAt = Date.now() + this.#retryMs;
          this.schedule();
          return;
        }
        this.#retryMs = 0;
        this.store.markIndexed(rows);
        rows = rows.length === BATCH ? this.store.unindexed(BATCH) : [];
      }
    } finally {
      this.#sending = false;
      // Ends that came while the batch was on its way: their own send found this one going, and
      // nothing else may come to send them (the app's last runs stayed `running` in the index).
      if (this.#again) this.soon();
    }
  }

  /** "taken"; "refused" for good (logged, not sent again); "later": unreachable or 5xx. */
  async #post(runs: RunReportBatch["runs"]): Promise<"taken" | "refused" | "later"> {
    try {
      const res = await controlPlaneFetch(this.env, controlPlanePath.runs, {
        method: "POST",
        headers: {
          authorization: `Bearer ${this.env.INTERNAL_TOKEN}`,
          "content-type": "application/json",
        },
        body: JSON.stringify({ runs }),
        signal: AbortSignal.timeout(10_000),
      });
      const text = await res.text();
      if (res.ok) return "taken";
      console.error(`[runs] the runs index refused ${runs.length} end(s): ${res.status} ${text}`);
      return res.status >= 500 || res.status === 429 ? "later" : "refused";
    } catch (err) {
      console.error(`[runs] the runs index is unreachable: ${(err as Error).message}`);
      return "later";
    }
  }
}
