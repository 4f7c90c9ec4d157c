/**
 * `runlet/client`: a client of Runlet's run API (`{api_url}/v4/{project}/...`, docs/api.md):
 *
 * - `run(app, fn, input, options)`: `POST /v4/{project}/{app}/{fn}` with `input` as the JSON body,
 *   `?async=true` and `?webhookEndpoint=` from the options, `X-Webhook-Secret` and
 *   `Idempotency-Key` as headers. A run whose function threw (500 `{run_id, error}`) rejects
 *   with a RunletError of code `function_error` that carries the run id.
 * - `status`, `cancel`: `GET` and `DELETE /v4/{project}/{app}/runs/{run_id}`.
 * - `redeliver`: `POST /v4/{project}/{app}/runs/{run_id}/deliveries`.
 * - `waitFor`: `status` again and again, the pause growing from 250 ms to 5 s, until the run has
 *   ended or the time is up.
 *
 * Every failure is a RunletError (status, code, message, run id when known), a request that never
 * got an answer included (status 0, `network_error`, the fetch's error as `cause`), so that one
 * `catch` sees them all. An abort through a caller's signal is not a failure of the API: it
 * rejects with the signal's reason, as `fetch` does.
 *
 * Plain ESM with no dependency and no build step, on `fetch` only: it runs as is in Node >= 18,
 * Cloudflare Workers, Deno, Bun and browsers. Its types are index.d.ts.
 */

import { invalidAnswer, networkError, RunletError, readBody, refusal } from "./errors.mjs";
import { asHeaderBytes } from "./headers.mjs";
import { pause, readUntil } from "./timers.mjs";

export { RunletError };

/**
 * @typedef {import("./index.d.ts").ClientOptions} ClientOptions
 * @typedef {import("./index.d.ts").FetchLike} FetchLike
 * @typedef {import("./index.d.ts").RunletClient} RunletClient
 * @typedef {import("./index.d.ts").RunStatus} RunStatus
 * @typedef {import("./index.d.ts").EndedStatus} EndedStatus
 * @typedef {import("./index.d.ts").RunView} RunView
 * @typedef {import("./index.d.ts").RunOptions} RunOptions
 * @typedef {import("./index.d.ts").RedeliverOptions} RedeliverOptions
 * @typedef {import("./index.d.ts").WaitOptions} WaitOptions
 * @typedef {import("./index.d.ts").RequestOptions} RequestOptions
 */

const ENDED = ["success", "failure", "cancelled"];
/** Statuses a function's own `status_code` may choose that carry no body (HTTP allows none). */
const BODILESS = [204, 205, 304];
/** Answers `waitFor` reads again: the run is still there, the way to it was not. */
const TRANSIENT = [0, 429, 502, 503, 504];
const DEFAULT_WAIT_MS = 10 * 60_000;
/** How many times `run` sends a call with an `idempotencyKey` again (no answer, `fromDevProxy`). */
const RESENDS = 2;

/** Runs whose app a client remembers (the newest). */
const REMEMBERED_RUNS = 10_000;
const FIRST_PAUSE_MS = 250;
const LONGEST_PAUSE_MS = 5_000;
/** How long `waitFor`'s last read, at its deadline, may take. */
const LAST_LOOK_MS = 1_000;

/**
 * @param {RunStatus} status
 * @returns {status is EndedStatus}
 */
export function isEnded(status) {
  return ENDED.includes(status);
}

/**
 * A 503 that is not the Worker's (every answer of the Worker carries `X-Request-Id`, and its
 * errors are JSON): under `runlet start --inspect` or `--verbose`, wrangler's dev proxy answers
 * a POST it could not pass on with `503 Your worker restarted mid-request`, also when nothing
 * restarted but a kept-alive connection to the Worker closed as the request went out
 * (docs/api.md, "Errors").
 *
 * @param {import("./index.d.ts").ResponseLike} res
 * @param {{ json: boolean }} answer
 */
const fromDevProxy = (res, answer) =>
  res.status === 503 && !answer.json && res.headers.get("x-request-id") === null;

/** @param {unknown} err */
const errorText = (err) => (err instanceof Error ? err.message : String(err));

/**
 * @param {ClientOptions} options
 * @returns {RunletClient}
 */
export function createClient(options) {
  const { project, token } = options;
  if (!options.apiUrl || !project || !token)
    throw new TypeError("createClient: apiUrl, project and token are required");
  const base = `${options.apiUrl.replace(/\/+$/, "")}/v4/${encodeURIComponent(project)}`;
  /** @type {FetchLike} */
  const send = options.fetch ?? ((url, init) => globalThis.fetch(url, init));
  const segment = encodeURIComponent;
  /** @param {string} app @param {string} runId */
  const runPath = (app, runId) => `/${segment(app)}/runs/${segment(runId)}`;

  /** The app of each run this client started: `status(runId)`, `waitFor(runId)` … need no app. */
  const appOfRun = new Map();
  /** @param {string} runId @param {string} app */
  const remember = (runId, app) => {
    if (appOfRun.size >= REMEMBERED_RUNS) appOfRun.delete(appOfRun.keys().next().value);
    appOfRun.set(runId, app);
  };
  /**
   * `(app, runId, options?)`, or `(runId, options?)` for a run this client started.
   *
   * @param {unknown[]} args
   * @returns {{ app: string, runId: string, opts: any }}
   */
  function runOf(args) {
    if (typeof args[1] === "string")
      return { app: String(args[0]), runId: args[1], opts: args[2] ?? {} };
    const runId = String(args[0]);
    const app = appOfRun.get(runId);
    if (app === undefined)
      throw new TypeError(
        `run ${runId} was not started by this client: give its app, as (app, runId)`,
      );
    return { app, runId, opts: args[1] ?? {} };
  }

  /**
   * Sends one request and reads its answer; a request that got no answer (or lost it midway)
   * becomes a RunletError, an abort its signal's reason.
   *
   * @param {string} method
   * @param {string} path below `/v4/{project}`, query included
   * @param {{ headers?: Record<string, string>, body?: string, signal?: AbortSignal }} init
   * @param {string} [runId] the run the request is about, if known
   */
  async function request(method, path, init, runId) {
    const headers = asHeaderBytes({ authorization: `Bearer ${token}`, ...init.headers });
    try {
      const { body, signal } = init;
      const res = await send(`${base}${path}`, { method, headers, body, signal });
      return { res, answer: await readBody(res) };
    } catch (err) {
      if (init.signal?.aborted) throw err;
      throw networkError(options.apiUrl, err, runId);
    }
  }

  /**
   * A run's state from `method` on its URL (`suffix` below it); a refusal throws.
   *
   * @param {string} method
   * @param {string} app
   * @param {string} runId
   * @param {{ suffix?: string, headers?: Record<string, string>, signal?: AbortSignal, ok?: number }} [init]
   * @returns {Promise<RunView>}
   */
  async function runState(method, app, runId, init = {}) {
    const path = `${runPath(app, runId)}${init.suffix ?? ""}`;
    const { res, answer } = await request(method, path, init, runId);
    if (res.status !== (init.ok ?? 200)) throw refusal(res, answer, runId);
    if (!answer.json || typeof answer.body?.status !== "string")
      throw invalidAnswer(res, answer.body, runId);
    return answer.body;
  }

  return {
    /**
     * One implementation of the overloads of index.d.ts: `any` because its answer's type is
     * chosen by `runOptions.async`, which the overloads express and a JSDoc signature cannot.
     *
     * @param {string} app
     * @param {string} fn
     * @param {unknown} [input]
     * @param {RunOptions} [runOptions]
     * @returns {Promise<any>}
     */
    async run(app, fn, input, runOptions = {}) {
      const query = new URLSearchParams();
      if (runOptions.async) query.set("async", "true");
      if (runOptions.webhook !== undefined) query.set("webhookEndpoint", runOptions.webhook);
      /** @type {Record<string, string>} */
      const headers = { "content-type": "application/json" };
      if (runOptions.secret !== undefined) headers["x-webhook-secret"] = runOptions.secret;
      if (runOptions.idempotencyKey !== undefined)
        headers["idempotency-key"] = runOptions.idempotencyKey;
      const path = `/${segment(app)}/${segment(fn)}${query.size ? `?${query}` : ""}`;
      const sent = input === undefined ? undefined : JSON.stringify(input);
      const init = { headers, body: sent, signal: runOptions.signal };
      // With its key, a call is sent again (up to RESENDS times) when its connection was cut
      // before an answer (as a Worker reloading under `runlet start` cuts it), or when the answer
      // is wrangler's dev proxy's and not the Worker's: the key makes a second send safe.
      const keyed = runOptions.idempotencyKey !== undefined;
      /** @type {Awaited<ReturnType<typeof request>> | undefined} */
      let got;
      for (let again = 0; !got; again++) {
        const last = !keyed || again === RESENDS;
        try {
          got = await request("POST", path, init);
          if (!last && fromDevProxy(got.res, got.answer)) got = undefined;
        } catch (err) {
          if (last || !(err instanceof RunletError && err.code === "network_error")) throw err;
        }
      }
      const { res, answer } = got;
      const runId = answer.body?.run_id ?? res.headers.get("x-request-id") ?? undefined;
      const replayed = res.headers.get("idempotent-replayed") === "true";
      const ok = res.status >= 200 && res.status < 300;
      // The function ran and returned (a refusal has a `code`, a throw an `error`).
      const body = answer.json && typeof answer.body === "object" ? answer.body : null;
      const ran = typeof body?.run_id === "string" && !("code" in body) && !("error" in body);
      // A run there is (it ran, threw, or waits): its app is remembered; a refusal made none.
      if (typeof body?.run_id === "string" && !("code" in body)) remember(body.run_id, app);
      if (ran && ok && runOptions.async) return { runId, replayed };
      // The function chose a status without a body: its run id is in X-Request-Id alone.
      if (
        !runOptions.async &&
        BODILESS.includes(res.status) &&
        answer.body === undefined &&
        runId
      ) {
        remember(runId, app);
        return { runId, result: undefined, runTimeMs: undefined, status: res.status, replayed };
      }
      // 2xx, or the result's own status_code.
      if (ran && !runOptions.async && (ok || "result" in body))
        return {
          runId,
          result: body.result,
          runTimeMs: body.run_time_ms,
          status: res.status,
          replayed,
        };
      if (ok) throw invalidAnswer(res, answer.body, runId);
      throw refusal(res, answer, runId);
    },
    /** @param {unknown[]} args */
    status(...args) {
      const { app, runId, opts } = runOf(args);
      return runState("GET", app, runId, { signal: opts.signal });
    },
    /** @param {unknown[]} args */
    cancel(...args) {
      const { app, runId, opts } = runOf(args);
      const suffix = opts.onlyIfQueued ? "?onlyIfQueued=true" : "";
      return runState("DELETE", app, runId, { suffix, signal: opts.signal });
    },
    /** @param {unknown[]} args */
    redeliver(...args) {
      const { app, runId, opts } = runOf(args);
      const query =
        opts.webhook === undefined
          ? ""
          : `?${new URLSearchParams({ webhookEndpoint: opts.webhook })}`;
      /** @type {Record<string, string>} */
      const headers = opts.secret === undefined ? {} : { "x-webhook-secret": opts.secret };
      return runState("POST", app, runId, {
        suffix: `/deliveries${query}`,
        headers,
        signal: opts.signal,
        ok: 202,
      });
    },
    /** @param {unknown[]} args */
    async waitFor(...args) {
      const { app, runId, opts } = runOf(args);
      const timeoutMs = opts.timeoutMs ?? DEFAULT_WAIT_MS;
      const deadline = Date.now() + timeoutMs;
      let wait = opts.intervalMs ?? FIRST_PAUSE_MS;
      /** @type {string} */
      let last = "not read yet";
      /** Whether a read has told the run's state: a read cut off at the deadline keeps it. */
      let known = false;
      /** @type {unknown} */
      let lastError;
      for (;;) {
        // A read is cut off at the deadline; the last look, once it has passed, within 1 s.
        const now = Date.now();
        const read = readUntil(now < deadline ? deadline : now + LAST_LOOK_MS, opts.signal);
        try {
          const view = await runState("GET", app, runId, { signal: read.signal });
          if (isEnded(view.status)) return view;
          last = view.status;
          known = true;
          lastError = undefined;
        } catch (err) {
          // A read cut off at the deadline is not an error of the run: the time is up.
          const cutOff = read.expired();
          if (!cutOff && !(err instanceof RunletError && TRANSIENT.includes(err.status))) throw err;
          if (!(cutOff && known))
            last = cutOff ? "no answer before the time was up" : `not read: ${errorText(err)}`;
          if (cutOff) lastError = undefined;
          else {
            known = false;
            lastError = err;
          }
        } finally {
          read.done();
        }
        const left = deadline - Date.now();
        if (left <= 0)
          throw new RunletError(`run ${runId} has not ended after ${timeoutMs} ms (${last})`, {
            status: 0,
            code: "timeout",
            runId,
            cause: lastError,
          });
        await pause(Math.min(wait, left), opts.signal);
        wait = Math.min(wait * 1.5, Math.max(LONGEST_PAUSE_MS, opts.intervalMs ?? 0));
      }
    },
  };
}
