/**
 * A run as the run API shows it (`GET /v4/{project}/{app}/runs/{run_id}`, the answer to a
 * cancel): built by the Worker's run store, read by the dashboard and the CLI. Never the
 * webhook's secret or the run's result.
 */
import type { RunStatus, WebhookState } from "./runs.ts";

/** One webhook delivery attempt, as shown. */
export interface AttemptView {
  attempt: number;
  /** When it was sent (RFC 3339). */
  at: string;
  /** The receiver's status, when it answered. */
  status?: number;
  /** Why no status: "timeout" or the network error. */
  error?: string;
  duration_ms: number;
  /** What the retry table made of it. */
  verdict: "delivered" | "retry" | "final";
}

/** One delivery of a run: its target and its attempts under the retry table. */
export interface DeliveryView {
  /** Scheme, host and path of the target (its query may hold credentials: not shown). */
  target: string;
  signed: boolean;
  state: WebhookState;
  attempts: AttemptView[];
}

/**
 * The run's webhook: its latest delivery. Once sent again (`POST …/runs/{run_id}/deliveries`),
 * `delivery` numbers it (2, 3, …) and `earlier` holds the ones before, oldest first.
 */
export interface WebhookView extends DeliveryView {
  delivery?: number;
  earlier?: Array<DeliveryView & { delivery: number }>;
}

export interface RunView {
  run_id: string;
  project: string;
  app: string;
  function: string;
  async: boolean;
  status: RunStatus;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  run_time_ms: number | null;
  /**
   * The runtime host the run went to, by its registry id (docs/hosts.md); null while it waits
   * for one, or when the host is not in a registry (the Worker's RUNTIME_HOST_URL).
   */
  host: string | null;
  /**
   * A custom app's run that ended with its answer: that answer's status (the body is not
   * shown); a sync function call whose result set its own status_code: that status.
   */
  status_code?: number;
  error?: { message: string };
  webhook?: WebhookView;
}
