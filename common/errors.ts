/**
 * The one error vocabulary of Runlet's three components: a closed list of codes, each with its
 * HTTP status. Every error body — the run API's, the management API's, the runtime host's — is
 * `{message, code}` (the run API adds `run_id` once a run exists). Code is what programs (and
 * tests) match on; the message is for people and may change.
 *
 * Imports nothing: the Worker bundles it.
 */

export const ERROR_STATUS = {
  bad_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  unprocessable: 422,
  too_many_requests: 429,
  headers_too_large: 431,
  internal: 500,
  bad_gateway: 502,
  unavailable: 503,
  gateway_timeout: 504,
  insufficient_storage: 507,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;
export type ErrorStatus = (typeof ERROR_STATUS)[ErrorCode];

export interface ErrorBody {
  message: string;
  code: ErrorCode;
}

const CODE_OF_STATUS = new Map<number, ErrorCode>(
  Object.entries(ERROR_STATUS).map(([code, status]) => [status, code as ErrorCode]),
);

/** The code of an error status; a status outside the list is an internal error's. */
export function codeOf(status: number): ErrorCode {
  return CODE_OF_STATUS.get(status) ?? (status >= 500 ? "internal" : "bad_request");
}

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === "string" && Object.hasOwn(ERROR_STATUS, value);
}

export function errorBody(status: number, message: string): ErrorBody {
  return { message, code: codeOf(status) };
}
