/**
 * What `runlet/client` makes of the run API's answers (index.mjs sends the requests): its one
 * error class, RunletError, and the error of each kind of answer — the API's `{message, code}`,
 * a function that threw, a body that is not the API's, no answer at all.
 */

/**
 * @typedef {import("./index.d.ts").ApiErrorCode} ApiErrorCode
 * @typedef {import("./index.d.ts").ResponseLike} ResponseLike
 * @typedef {import("./index.d.ts").RunletErrorCode} RunletErrorCode
 */

/** The run API's error codes by status, as common/errors.ts has them (a test compares both). */
export const ERROR_CODES = /** @type {const} */ ({
  400: "bad_request",
  401: "unauthorized",
  403: "forbidden",
  404: "not_found",
  405: "method_not_allowed",
  408: "request_timeout",
  409: "conflict",
  413: "payload_too_large",
  415: "unsupported_media_type",
  422: "unprocessable",
  429: "too_many_requests",
  431: "headers_too_large",
  500: "internal",
  502: "bad_gateway",
  503: "unavailable",
  504: "gateway_timeout",
  507: "insufficient_storage",
});

export class RunletError extends Error {
  /**
   * @param {string} message
   * @param {{ status: number, code: RunletErrorCode, runId?: string, runTimeMs?: number,
   *   body?: unknown, replayed?: boolean, cause?: unknown }} fields
   */
  constructor(message, fields) {
    super(message, fields.cause === undefined ? undefined : { cause: fields.cause });
    /** @type {"RunletError"} */
    this.name = "RunletError";
    this.status = fields.status;
    this.code = fields.code;
    this.runId = fields.runId;
    this.runTimeMs = fields.runTimeMs;
    this.body = fields.body;
    this.replayed = fields.replayed ?? false;
  }
}

/**
 * The code of an answer's status, for an answer that names none.
 *
 * @param {number} status
 * @returns {ApiErrorCode}
 */
function codeOf(status) {
  const code = /** @type {Record<number, ApiErrorCode | undefined>} */ (ERROR_CODES)[status];
  return code ?? (status >= 500 ? "internal" : "bad_request");
}

/**
 * An answer's body: its JSON, or its text when it is not JSON (undefined when empty).
 *
 * @param {ResponseLike} res
 * @returns {Promise<{ json: boolean, body: any }>}
 */
export async function readBody(res) {
  const text = await res.text();
  if (text === "") return { json: false, body: undefined };
  try {
    return { json: true, body: JSON.parse(text) };
  } catch {
    return { json: false, body: text };
  }
}

/**
 * The RunletError of a refused call: the answer's `{message, code, run_id}`, or, for a body that
 * is not that (a proxy's page, an empty answer), a message saying what came.
 *
 * @param {ResponseLike} res
 * @param {{ json: boolean, body: any }} answer
 * @param {string | undefined} runId
 */
export function refusal(res, { json, body }, runId) {
  // An Idempotency-Key's first answer given again: a function that threw, or a 502 or 504 kept.
  const replayed = res.headers.get("idempotent-replayed") === "true";
  const fields = { status: res.status, body, runId: body?.run_id ?? runId, replayed };
  const threw = json && body?.error && typeof body.error.message === "string" && !body.code;
  if (threw) {
    return new RunletError(body.error.message, {
      ...fields,
      code: "function_error",
      runTimeMs: typeof body.run_time_ms === "number" ? body.run_time_ms : undefined,
    });
  }
  const code = json && typeof body?.code === "string" ? body.code : codeOf(res.status);
  if (json && typeof body?.message === "string")
    return new RunletError(body.message, { ...fields, code });
  const came =
    body === undefined
      ? "no body"
      : `a body that is not Runlet's: ${(typeof body === "string" ? body : JSON.stringify(body)).slice(0, 200)}`;
  const message = `the run API answered ${res.status} with ${came}`;
  return new RunletError(message, { ...fields, code });
}

/**
 * A 2xx whose body is not what the run API answers.
 *
 * @param {ResponseLike} res
 * @param {unknown} body
 * @param {string | undefined} runId
 */
export function invalidAnswer(res, body, runId) {
  return new RunletError(`the run API answered ${res.status} with a body it never sends`, {
    status: res.status,
    code: "invalid_answer",
    runId,
    body,
  });
}

/**
 * A request that got no answer (refused connection, DNS, TLS, a reset): status 0.
 *
 * @param {string} apiUrl
 * @param {unknown} err the fetch's error
 * @param {string | undefined} runId
 */
export function networkError(apiUrl, err, runId) {
  return new RunletError(`cannot reach the run API at ${apiUrl}: ${describe(err)}`, {
    status: 0,
    code: "network_error",
    runId,
    cause: err,
  });
}

/** @param {unknown} err */
function describe(err) {
  const cause = /** @type {{ cause?: { message?: unknown } }} */ (err)?.cause;
  const message = err instanceof Error ? err.message : String(err);
  return typeof cause?.message === "string" ? `${message} (${cause.message})` : message;
}
