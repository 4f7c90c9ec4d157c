/**
 * One Durable Object per run (named by its run id): the record of an async run, and of any run
 * whose response goes to a webhook. It hands an async run to the runtime host, takes the host's
 * report of its end, and drives the webhook delivery; its alarm is the watchdog that turns a
 * lost run into `failure` and resumes a delivery after an eviction. Nothing here depends on a
 * request staying open: a 12-hour run is a record, a deadline and an alarm.
 *
 *   pending ──host accepted──▶ running ──host reported──▶ success | failure
 *      │                          │──deadline passed, host lost it──▶ failure
 *      │                          └──DELETE──▶ cancelled   (pending also ──DELETE──▶ cancelled)
 *      ├──host refused──▶ failure
 *      └──ended within HOST_WAIT_MS (the host's answer is its end)──▶ success | failure
 */
import { DurableObject } from "cloudflare:workers";
import { HEADER } from "../common/consts.ts";
import type { Env } from "./env.ts";
import { RunApiError } from "./errors.ts";
import { hostError } from "./host.ts";
import { type RunReport, reportRun } from "./runs-index.ts";
import {
  ATTEMPT_TIMEOUT_MS,
  attemptDelivery,
  type DeliveryAttempt,
  deliveryState,
  nextAttemptAt,
  RETRY_DELAYS_MS,
} from "./webhooks/deliver.ts";

export type RunStatus = "pending" | "running" | "success" | "failure" | "cancelled";

const ENDED: readonly RunStatus[] = ["success", "failure", "cancelled"];

/** Between two questions to the host about a running run (RUN_WATCHDOG_MS overrides). */
const WATCHDOG_MS = 30_000;
/** Unanswered watchdog questions in a row before the run is given up as lost. */
const HOST_MISSES = 3;
/** How long past its deadline a run may still be reported before it is failed. */
const DEADLINE_MARGIN_MS = 60_000;
/**
 * How long the host may hold its answer to a run's submission for the run's end: a run that
 * ends sooner goes from pending straight to its end, with one write and no callback.
 */
const HOST_WAIT_MS = 100;
/** How long a run's record is kept after it ended and its delivery is over. */
export const RETAIN_MS = 7 * 24 * 60 * 60_000;

export interface WebhookState {
  /** Scheme, host and path of the target (its query may hold credentials: not shown). */
  target: string;
  signed: boolean;
  state: "pending" | "delivered" | "failed";
  attempts: DeliveryAttempt[];
}

export interface RunRecord {
  run_id: string;
  project: string;
  app: string;
  function: string;
  async: boolean;
  status: RunStatus;
  created_at: number;
  started_at?: number;
  finished_at?: number;
  deadline_at?: number;
  run_time_ms?: number;
  error?: { message: string };
  webhook?: WebhookState;
  /** Watchdog questions the host left unanswered in a row. */
  host_misses?: number;
}

/** Where the response goes, and the secret that signs it (kept until the delivery ends). */
export interface WebhookRequest {
  url: string;
  secret?: string;
}

export interface NewRun {
  runId: string;
  project: string;
  app: string;
  fn: string;
  createdAt: number;
}

/** How the host reports an async run's end (and answers about it). */
export interface HostRun {
  status: "running" | RunStatus;
  startedAt?: number;
  finishedAt?: number;
  deadlineAt?: number;
  result?: unknown;
  /** A custom app's answer, for its async runs. */
  http?: { status_code: number; content_type: string | null; body: string };
  error?: { message: string };
  runTimeMs?: number;
}

/** A custom app's request, for its async runs: sent to the app as it came. */
export interface AppRequest {
  method: string;
  /** The path after the app, and the query less Runlet's own parameters. */
  pathAndQuery: string;
  headers: Record<string, string>;
}

/**
 * A custom app's answer as a run's outcome: `result` its body (JSON parsed where it is JSON,
 * else text), `status_code` its status; `failure` from 500 on, or when the body was over
 * 10 MiB (`text` undefined, not delivered).
 */
export function answerOutcome(
  status_code: number,
  contentType: string | null,
  text: string | undefined,
  run_time_ms: number | null,
): Outcome {
  const result = text === undefined ? null : appResult(text, contentType);
  if (status_code < 500 && text !== undefined)
    return { status: "success", result, status_code, run_time_ms };
  const message =
    text === undefined
      ? "the app's answer is larger than 10 MiB: not delivered"
      : `the app answered ${status_code}`;
  return { status: "failure", error: { message }, result, status_code, run_time_ms };
}

function appResult(text: string, contentType: string | null): unknown {
  if (contentType?.includes("json")) {
    try {
      return JSON.parse(text);
    } catch {
      // not JSON after all: the text as it is
    }
  }
  return text;
}

/** What a delivery body says about the run (DESIGN.md §4, "Webhook delivery"). */
export type Outcome =
  | { status: "success"; result: unknown; run_time_ms: number | null; status_code?: number }
  | {
      status: "failure";
      error: { message: string };
      run_time_ms: number | null;
      result?: unknown;
      status_code?: number;
    };

/** What `GET /v4/{project}/{app}/runs/{run_id}` shows: never the secret or the result. */
export function runView(run: RunRecord) {
  const time = (ms: number | undefined) => (ms === undefined ? null : new Date(ms).toISOString());
  return {
    run_id: run.run_id,
    project: run.project,
    app: run.app,
    function: run.function,
    async: run.async,
    status: run.status,
    created_at: time(run.created_at),
    started_at: time(run.started_at),
    finished_at: time(run.finished_at),
    run_time_ms: run.run_time_ms ?? null,
    ...(run.error ? { error: run.error } : {}),
    ...(run.webhook
      ? {
          webhook: {
            ...run.webhook,
            attempts: run.webhook.attempts.map((a) => ({ ...a, at: time(a.at) })),
          },
        }
      : {}),
  };
}

export type RunView = ReturnType<typeof runView>;

/**
 * An answer for the caller that is not the run (errors thrown across a Durable Object call
 * lose their class, so refusals travel as values).
 */
export interface Refusal {
  refused: { status: RunApiError["status"]; message: string };
}

function refusal(err: RunApiError): Refusal {
  return { refused: { status: err.status, message: err.message } };
}

/** The view, or the refusal as the `RunApiError` it was. */
export function viewOrThrow<T extends object>(answer: T): Exclude<T, Refusal> {
  if ("refused" in answer) {
    const { status, message } = (answer as Refusal).refused;
    throw new RunApiError(status, message);
  }
  return answer as Exclude<T, Refusal>;
}

function failed(message: string, run_time_ms: number | null = null): Outcome {
  return { status: "failure", error: { message }, run_time_ms };
}

function webhookTarget(url: string): string {
  const parsed = new URL(url);
  return `${parsed.origin}${parsed.pathname}`;
}

export class RunObject extends DurableObject<Env> {
  /** The delivery loop running in this instance, if any (an alarm must not start a second). */
  #pumping: Promise<void> | undefined;

  /**
   * An async run: records it `pending` and answers as soon as that is durable; then hands it
   * to the runtime host (which reports its end to `callbackUrl`). A host that refuses it or
   * cannot be reached makes it `failure`, delivered like any failure; if this object goes away
   * before the host answered, the alarm makes it `failure`.
   */
  async begin(
    run: NewRun,
    payload: ArrayBuffer,
    callbackUrl: string,
    webhook?: WebhookRequest,
    request?: AppRequest,
  ): Promise<RunView> {
    const record: RunRecord = {
      run_id: run.runId,
      project: run.project,
      app: run.app,
      function: run.fn,
      async: true,
      status: "pending",
      created_at: run.createdAt,
      ...(webhook ? { webhook: this.#webhookState(webhook) } : {}),
    };
    // One write, durable before the answer leaves and before the host hears of the run.
    this.#save(record, webhook);
    this.ctx.storage.setAlarm(Date.now() + this.#watchdogMs());
    void this.#submit(record, payload, callbackUrl, request);
    return runView(record);
  }

  async #submit(
    record: RunRecord,
    payload: ArrayBuffer,
    callbackUrl: string,
    request?: AppRequest,
  ): Promise<void> {
    const { project, app } = record;
    const internal = {
      authorization: `Bearer ${this.env.INTERNAL_TOKEN}`,
      [HEADER.runId]: record.run_id,
      [HEADER.callbackUrl]: callbackUrl,
      [HEADER.waitMs]: String(HOST_WAIT_MS),
    };
    // Unless it was cancelled meanwhile, a run the host did not take has failed.
    const notTaken = async (message: string) => {
      const current = (await this.#load()) ?? record;
      if (current.status === "pending") await this.#end(current, failed(message), true);
    };
    let answer: Response;
    try {
      answer = await fetch(
        request
          ? `${this.env.RUNTIME_HOST_URL}/internal/async-http/${project}/${app}${request.pathAndQuery}`
          : `${this.env.RUNTIME_HOST_URL}/internal/async/${project}/${app}/${encodeURIComponent(record.function)}`,
        {
          method: request?.method ?? "POST",
          headers: request
            ? { ...request.headers, ...internal }
            : { ...internal, "content-type": "application/json" },
          body: request?.method === "GET" || request?.method === "HEAD" ? undefined : payload,
          signal: AbortSignal.timeout(10_000),
        },
      );
    } catch {
      await notTaken("the runtime host is not reachable");
      return;
    }
    if (answer.status === 200) {
      await this.complete((await answer.json()) as HostRun); // it ended while the host held on
      return;
    }
    if (answer.status !== 202) {
      await notTaken((await hostError(answer)).message);
      return;
    }
    const accepted = (await answer.json()) as HostRun;
    // The host may already have reported the end (a quick function), or the run was cancelled.
    const current = (await this.#load()) ?? record;
    if (current.status === "cancelled") await this.#cancelOnHost(current.run_id);
    if (current.status !== "pending") return;
    current.status = "running";
    current.started_at = accepted.startedAt ?? Date.now();
    current.deadline_at = accepted.deadlineAt;
    this.#save(current);
    await this.#schedule(current);
  }

  /** The runtime host's report of an async run's end (its callback, or its answer). */
  async complete(report: HostRun): Promise<RunView | null> {
    const run = await this.#load();
    if (!run) return null;
    if (ENDED.includes(run.status) || report.status === "running") return runView(run);
    if (report.status === "cancelled") {
      await this.#end(run, { status: "cancelled" }, false);
    } else {
      if (run.started_at === undefined) run.started_at = report.startedAt;
      const run_time_ms = report.runTimeMs ?? null;
      const { http } = report;
      await this.#end(
        run,
        http
          ? answerOutcome(http.status_code, http.content_type, http.body, run_time_ms)
          : report.status === "success"
            ? { status: "success", result: report.result, run_time_ms }
            : failed(report.error?.message ?? "the run failed", run_time_ms),
        true,
        report,
      );
    }
    return runView(run);
  }

  /**
   * A synchronous run that answered its caller and has a webhook: records it and starts the
   * delivery (driven by this object, so it outlives the Worker's request).
   */
  async delivered(run: NewRun, outcome: Outcome, webhook: WebhookRequest): Promise<void> {
    const record: RunRecord = {
      run_id: run.runId,
      project: run.project,
      app: run.app,
      function: run.fn,
      async: false,
      status: "pending",
      created_at: run.createdAt,
      started_at: run.createdAt,
      webhook: this.#webhookState(webhook),
    };
    await this.#save(record, webhook);
    await this.#end(record, outcome, true);
  }

  /** Cancels a pending or running async run; 409 once it has ended. */
  async cancel(): Promise<RunView | Refusal | null> {
    const run = await this.#load();
    if (!run) return null;
    if (!run.async) return refusal(new RunApiError(409, "only async runs can be cancelled"));
    if (ENDED.includes(run.status))
      return refusal(new RunApiError(409, `run '${run.run_id}' has already ended: ${run.status}`));
    await this.#end(run, { status: "cancelled" }, false);
    await this.#cancelOnHost(run.run_id);
    return runView(run);
  }

  /** Stops the function (its ctx.signal aborts); a host that does not know the run is fine. */
  async #cancelOnHost(runId: string): Promise<void> {
    await fetch(`${this.env.RUNTIME_HOST_URL}/internal/runs/${runId}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${this.env.INTERNAL_TOKEN}` },
      signal: AbortSignal.timeout(10_000),
    }).then(
      (res) => res.body?.cancel(),
      (err: Error) => console.error(`[run] could not cancel ${runId} on the host: ${err}`),
    );
  }

  async view(): Promise<RunView | null> {
    const run = await this.#load();
    return run ? runView(run) : null;
  }

  /** The watchdog, the delivery's timer and the record's expiry, in one alarm. */
  override async alarm(): Promise<void> {
    const run = await this.#load();
    if (!run) return;
    if (run.status === "pending") {
      await this.#end(run, failed("the run could not be handed to the runtime host"), true);
    } else if (run.status === "running") {
      await this.#askHost(run);
    }
    const now = await this.#load();
    if (!now) return;
    if (now.webhook?.state === "pending") await this.#pump();
    else if (ENDED.includes(now.status) && Date.now() >= (now.finished_at ?? 0) + RETAIN_MS) {
      await this.ctx.storage.deleteAll();
      return;
    }
    await this.#schedule((await this.#load()) ?? now);
  }

  /** Asks the host about a running run whose report has not come (lost callback, lost host). */
  async #askHost(run: RunRecord): Promise<void> {
    let answer: Response | undefined;
    try {
      answer = await fetch(`${this.env.RUNTIME_HOST_URL}/internal/runs/${run.run_id}`, {
        headers: { authorization: `Bearer ${this.env.INTERNAL_TOKEN}` },
        signal: AbortSignal.timeout(10_000),
      });
    } catch {
      answer = undefined;
    }
    if (answer?.status === 404) {
      await answer.body?.cancel();
      await this.#end(run, failed("the runtime host lost the run (it restarted)"), true);
      return;
    }
    if (answer?.ok) {
      const report = (await answer.json()) as HostRun;
      if (report.status !== "running") {
        await this.complete(report);
        return;
      }
      run.host_misses = 0;
    } else {
      await answer?.body?.cancel();
      run.host_misses = (run.host_misses ?? 0) + 1;
    }
    const overdue =
      run.deadline_at !== undefined && Date.now() > run.deadline_at + DEADLINE_MARGIN_MS;
    if (overdue || (run.host_misses ?? 0) >= HOST_MISSES) {
      await this.#end(
        run,
        failed(
          overdue
            ? "the run did not finish within the app's response_grace_period"
            : "the runtime host stopped answering about the run",
        ),
        true,
      );
      return;
    }
    await this.#save(run);
  }

  /**
   * Ends the run with `outcome`; with `deliver` and a webhook, builds the delivery body and
   * starts the delivery, else the webhook (if any) is dropped with its secret. An end that is
   * `byHost`'s report (success or failure) the host also reports to the runs index; any other
   * this object reports.
   */
  async #end(
    run: RunRecord,
    outcome: Outcome | { status: "cancelled" },
    deliver: boolean,
    byHost?: HostRun,
  ): Promise<void> {
    const finishedAt = byHost?.finishedAt ?? Date.now();
    run.status = outcome.status;
    run.finished_at = finishedAt;
    if ("run_time_ms" in outcome && outcome.run_time_ms !== null)
      run.run_time_ms = outcome.run_time_ms;
    if (outcome.status === "failure") run.error = outcome.error;
    delete run.host_misses;
    if (run.webhook && outcome.status !== "cancelled" && deliver) {
      const body = JSON.stringify({
        run_id: run.run_id,
        ...outcome,
        timestamp: new Date(finishedAt).toISOString(),
      });
      await this.ctx.storage.put({ run, body });
      void this.#pump();
    } else {
      if (run.webhook?.state === "pending") run.webhook.state = "failed";
      await this.#closeDelivery(run);
    }
    if (!byHost || outcome.status === "cancelled") this.#report(run);
  }

  /**
   * Saves `run` with its delivery over (or never to be): the secret, the body and the target
   * are not kept a moment longer; the alarm moves on to what is left.
   */
  async #closeDelivery(run: RunRecord): Promise<void> {
    await this.ctx.storage.delete(["secret", "body", "url"]);
    await this.#save(run);
    await this.#schedule(run);
  }

  /** Sends the attempts that are due, one after another, until the delivery ends or waits. */
  #pump(): Promise<void> {
    this.#pumping ??= (async () => {
      try {
        for (;;) {
          const run = await this.#load();
          const body = await this.ctx.storage.get<string>("body");
          if (run?.webhook?.state !== "pending" || body === undefined) return;
          const due = nextAttemptAt(run.webhook.attempts, this.#retryDelays());
          if (due === undefined) return;
          const wait = due - Date.now();
          if (wait > 0) {
            // The alarm resumes the delivery if this object is evicted meanwhile.
            await this.ctx.storage.setAlarm(due + 2_000);
            await new Promise((r) => setTimeout(r, wait));
          }
          const attempt = await attemptDelivery(
            {
              url: (await this.ctx.storage.get<string>("url")) ?? "",
              runId: run.run_id,
              body,
              secret: await this.ctx.storage.get<string>("secret"),
              brand: this.env.RUNLET_BRAND,
            },
            run.webhook.attempts.length + 1,
            { timeoutMs: Number(this.env.WEBHOOK_TIMEOUT_MS) || ATTEMPT_TIMEOUT_MS },
          );
          run.webhook.attempts.push(attempt);
          run.webhook.state = deliveryState(run.webhook.attempts);
          if (run.webhook.state === "pending") {
            await this.#save(run);
            continue;
          }
          if (run.webhook.state === "failed") {
            const last = run.webhook.attempts.at(-1);
            console.error(
              `[run] webhook delivery of ${run.run_id} failed after ${run.webhook.attempts.length} attempt(s): ${last?.status ?? last?.error}`,
            );
          }
          await this.#closeDelivery(run);
          return;
        }
      } finally {
        this.#pumping = undefined;
      }
    })();
    return this.#pumping;
  }

  /** The next alarm: the watchdog while running, the next attempt, or the record's expiry. */
  async #schedule(run: RunRecord): Promise<void> {
    const times: number[] = [];
    if (run.status === "pending" || run.status === "running")
      times.push(Date.now() + this.#watchdogMs());
    if (run.webhook?.state === "pending") {
      const due = nextAttemptAt(run.webhook.attempts, this.#retryDelays());
      if (due !== undefined) times.push(Math.max(due, Date.now()) + 2_000);
    }
    if (times.length === 0) times.push((run.finished_at ?? Date.now()) + RETAIN_MS);
    await this.ctx.storage.setAlarm(Math.min(...times));
  }

  #webhookState(webhook: WebhookRequest): WebhookState {
    return {
      target: webhookTarget(webhook.url),
      signed: webhook.secret !== undefined,
      state: "pending",
      attempts: [],
    };
  }

  /** Saves the record; with `webhook`, also where it goes and its secret (never shown). */
  async #save(run: RunRecord, webhook?: WebhookRequest): Promise<void> {
    await this.ctx.storage.put<unknown>({
      run,
      ...(webhook ? { url: webhook.url } : {}),
      ...(webhook?.secret !== undefined ? { secret: webhook.secret } : {}),
    });
  }

  #load(): Promise<RunRecord | undefined> {
    return this.ctx.storage.get<RunRecord>("run");
  }

  /**
   * An async run's end that this object decided (cancelled; failed by the watchdog or by the
   * host's refusal) goes to the runs index from here, and replaces an end the host reported;
   * the host reports the run's `running` and the ends it reported itself. A sync run is the
   * host's (or its Worker's) to report.
   */
  #report(run: RunRecord): void {
    if (!run.async) return;
    const report: RunReport = {
      projectId: run.project,
      app: run.app,
      function: run.function,
      async: run.async,
      status: run.status,
      createdAt: run.created_at,
      finishedAt: run.finished_at ?? null,
      runTimeMs: run.run_time_ms ?? null,
    };
    this.ctx.waitUntil(reportRun(this.env, run.run_id, report));
  }

  #watchdogMs(): number {
    return Number(this.env.RUN_WATCHDOG_MS) || WATCHDOG_MS;
  }

  #retryDelays(): readonly number[] {
    const configured = this.env.WEBHOOK_RETRY_DELAYS_MS?.split(",").map(Number);
    return configured?.every((n) => Number.isFinite(n) && n >= 0) ? configured : RETRY_DELAYS_MS;
  }
}
