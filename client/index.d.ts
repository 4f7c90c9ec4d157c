/**
 * `runlet/client`: a typed client of Runlet's run API (`{api_url}/v4/...`): run a function, read
 * or cancel a run, wait for its end, deliver its webhook again. See docs/client.md. Structural
 * types only, so that no particular `lib` (DOM, Node, Workers) is needed: the global `fetch` of
 * any runtime fits, or pass your own.
 */

/** The `fetch` the client calls: the global one by default. */
export type FetchLike = (
  url: string,
  init: {
    method: string;
    headers: Record<string, string>;
    body?: string;
    signal?: AbortSignal;
  },
) => Promise<ResponseLike>;

/** What the client reads of a Fetch API `Response`. */
export interface ResponseLike {
  readonly status: number;
  readonly headers: { get(name: string): string | null };
  text(): Promise<string>;
}

export interface ClientOptions {
  /** The run API, e.g. `http://127.0.0.1:8787` (a trailing slash is fine). */
  apiUrl: string;
  /** The project's id (`prj_…`). */
  project: string;
  /** A user's or a service account's token (a JWT), sent as `Authorization: Bearer`. */
  token: string;
  /** Another `fetch` (a test double, a proxy's); default the global `fetch`. */
  fetch?: FetchLike;
}

/** A run's status: `queued` and `running`, then one of the three ends, which it never leaves. */
export type RunStatus = "queued" | "running" | "success" | "failure" | "cancelled";

/** The statuses a run never leaves; `waitFor` resolves at the first of them. */
export type EndedStatus = "success" | "failure" | "cancelled";

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
  /** What the retry rules made of it. */
  verdict: "delivered" | "retry" | "final";
}

/** One delivery of a run's outcome: its target (without its query), whether signed, its attempts. */
export interface DeliveryView {
  /** Scheme, host and path of the target (its query may hold credentials: not shown). */
  target: string;
  signed: boolean;
  state: "pending" | "delivered" | "failed" | "cancelled";
  attempts: AttemptView[];
}

/**
 * A run's webhook: its latest delivery. Once sent again (`redeliver`), `delivery` numbers it
 * (2, 3, …) and `earlier` holds the ones before, oldest first.
 */
export interface WebhookView extends DeliveryView {
  delivery?: number;
  earlier?: Array<DeliveryView & { delivery: number }>;
}

/**
 * A run as the run API shows it (`GET …/runs/{run_id}`, and the answer to a cancel and to a
 * redelivery). Never its result or its webhook's secret.
 */
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
  /** The runtime host the run went to (its registry id), or null. */
  host: string | null;
  /** A custom app's run that ended with its answer: that answer's status; a sync function call whose result set its own status_code: that status. */
  status_code?: number;
  /** Why a run failed. */
  error?: { message: string };
  /** For runs called with a webhook. */
  webhook?: WebhookView;
}

export interface RequestOptions {
  /** Aborts the request; the promise then rejects with the signal's reason, not a RunletError. */
  signal?: AbortSignal;
}

export interface RunOptions extends RequestOptions {
  /** `?async=true`: answer at once with the run id and run in the background. */
  async?: boolean;
  /** `?webhookEndpoint=`: POST the run's outcome to this URL once it has ended. */
  webhook?: string;
  /** `X-Webhook-Secret`: sign the webhook's deliveries with it. */
  secret?: string;
  /**
   * `Idempotency-Key`: the same key and request again answers the first run, not a new one. With
   * it, a call whose connection was cut before an answer, or answered by wrangler's dev proxy's
   * 503 instead of the Worker, is sent again (twice at most).
   */
  idempotencyKey?: string;
}

/** A synchronous run whose function returned. */
export interface RunResult<R = unknown> {
  runId: string;
  /**
   * What the function returned (`null` when it returned nothing); `undefined` when its own
   * `status_code` was 204, 205 or 304, which are answered without a body.
   */
  result: R;
  /** How long the function ran, in ms; `undefined` for a 204, 205 or 304 (no body says it). */
  runTimeMs: number | undefined;
  /** The HTTP status: 200, or the result's own `status_code` (200–599). */
  status: number;
  /** True when this is the kept answer of an earlier call with the same `idempotencyKey`. */
  replayed: boolean;
}

/** An async run, accepted: it is `queued`. */
export interface AcceptedRun {
  runId: string;
  /** True when the run was accepted by an earlier call with the same `idempotencyKey`. */
  replayed: boolean;
}

export interface CancelOptions extends RequestOptions {
  /** `?onlyIfQueued=true`: cancel the run only while it is queued; one that has started runs on. */
  onlyIfQueued?: boolean;
}

export interface RedeliverOptions extends RequestOptions {
  /** Deliver to this URL instead of the run's own webhook. */
  webhook?: string;
  /** Sign the delivery with this secret (the run's own is forgotten once its delivery ends). */
  secret?: string;
}

export interface WaitOptions extends RequestOptions {
  /** The first pause between two reads, in ms; each next is half again as long, up to 5 s. Default 250. */
  intervalMs?: number;
  /** How long to wait in all, in ms (`Infinity`: no bound). Default 600,000 (10 minutes). */
  timeoutMs?: number;
}

export interface RunletClient {
  /**
   * Runs `fn` of the managed app `app` with `input` (JSON; omitted: `null`) and answers its
   * result. A function that threw rejects with a RunletError of code `function_error`, carrying
   * the run id; a result with its own `status_code` resolves (see `status`).
   */
  run<R = unknown>(
    app: string,
    fn: string,
    input?: unknown,
    options?: RunOptions & { async?: false },
  ): Promise<RunResult<R>>;
  /** With `async: true`: answers once the run is accepted (queued), with its id. */
  run(
    app: string,
    fn: string,
    input: unknown,
    options: RunOptions & { async: true },
  ): Promise<AcceptedRun>;
  run<R = unknown>(
    app: string,
    fn: string,
    input: unknown,
    options: RunOptions,
  ): Promise<RunResult<R> | AcceptedRun>;
  /**
   * The run's state. `status`, `cancel`, `redeliver` and `waitFor` take `(app, runId)`, or only
   * the `runId` of a run this client started (it remembers their apps); a run id it does not
   * know, without its app, is a TypeError.
   */
  status(app: string, runId: string, options?: RequestOptions): Promise<RunView>;
  status(runId: string, options?: RequestOptions): Promise<RunView>;
  /**
   * Cancels a queued or running async run; answers it `cancelled`. An ended run is a 409, and so
   * is one that has started when `onlyIfQueued` is set.
   */
  cancel(app: string, runId: string, options?: CancelOptions): Promise<RunView>;
  cancel(runId: string, options?: CancelOptions): Promise<RunView>;
  /**
   * Delivers an ended run's outcome to its webhook again (or to `webhook`), the same body and
   * `X-Request-Id` as the first delivery; answers the run with its new delivery under way. A 409
   * while a delivery is in progress, for a run that has not ended, or one that had no webhook.
   */
  redeliver(app: string, runId: string, options?: RedeliverOptions): Promise<RunView>;
  redeliver(runId: string, options?: RedeliverOptions): Promise<RunView>;
  /**
   * Reads the run until it has ended (success, failure or cancelled) and answers it then.
   * Network failures and 429, 502, 503 and 504 answers are read again; past `timeoutMs` it
   * rejects with a RunletError of code `timeout`.
   */
  waitFor(app: string, runId: string, options?: WaitOptions): Promise<RunView>;
  waitFor(runId: string, options?: WaitOptions): Promise<RunView>;
}

/** Creates a client of one project's run API. Nothing is sent until a method is called. */
export function createClient(options: ClientOptions): RunletClient;

/** The run API's error codes: each with its one status (docs/api.md, "Errors"). */
export type ApiErrorCode =
  | "bad_request"
  | "unauthorized"
  | "forbidden"
  | "not_found"
  | "method_not_allowed"
  | "request_timeout"
  | "conflict"
  | "payload_too_large"
  | "unsupported_media_type"
  | "unprocessable"
  | "too_many_requests"
  | "headers_too_large"
  | "internal"
  | "bad_gateway"
  | "unavailable"
  | "gateway_timeout"
  | "insufficient_storage";

/**
 * A RunletError's code: the API's own (or, for an answer without one, the code of its status);
 * `function_error`: the function threw (status 500, `runTimeMs` set); `network_error`: no answer
 * at all (status 0, `cause` is the fetch's error); `invalid_answer`: a success whose body is not
 * what the API answers (a proxy's page, say); `timeout`: `waitFor` ran out of time (status 0).
 */
export type RunletErrorCode =
  | ApiErrorCode
  | "function_error"
  | "network_error"
  | "invalid_answer"
  | "timeout";

/** Every failure of the client, but an abort through a signal (which rejects with its reason). */
export class RunletError extends Error {
  override readonly name: "RunletError";
  /** The HTTP status; 0 when there was no answer (`network_error`, `timeout`). */
  readonly status: number;
  readonly code: RunletErrorCode;
  /** The run the error is about, when known (the answer's `run_id` or `X-Request-Id`). */
  readonly runId: string | undefined;
  /** How long the function ran before it threw (`function_error` only). */
  readonly runTimeMs: number | undefined;
  /** The answer's body: parsed JSON, or its text when it is not JSON; undefined without one. */
  readonly body: unknown;
  /**
   * The answer is an `Idempotency-Key`'s first one given again (`Idempotent-Replayed: true`):
   * a function that threw, or a 502 or 504 kept for the key; nothing ran for this call.
   */
  readonly replayed: boolean;
  constructor(
    message: string,
    fields: {
      status: number;
      code: RunletErrorCode;
      runId?: string;
      runTimeMs?: number;
      body?: unknown;
      replayed?: boolean;
      cause?: unknown;
    },
  );
}

/** True for the statuses a run never leaves. */
export function isEnded(status: RunStatus): status is EndedStatus;
