/** Pieces every route definition shares: the error body, the bearer scheme, the 400 hook. */

import type { Hook } from "@hono/zod-openapi";
import { z } from "@hono/zod-openapi";
import { bodyLimit } from "hono/body-limit";
import { describeZodError } from "../common/app-config.ts";
import { ERROR_STATUS, type ErrorCode } from "../common/errors.ts";
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from "../common/page-size.ts";
import { upperCaseTime } from "../common/rfc3339.ts";
import type { AppEnv } from "./context.ts";
import { ApiError } from "./errors.ts";
import { loneSurrogateAt } from "./lone-surrogates.ts";

export const errorSchema = z
  .object({
    message: z.string().openapi({ example: "limit: must be an integer from 1 to 200" }),
    code: z.enum(Object.keys(ERROR_STATUS) as [ErrorCode, ...ErrorCode[]]).openapi({
      description: "What went wrong, for programs: a closed list, each code with one status.",
    }),
  })
  .openapi("Error");

const error = (description: string) => ({
  description,
  content: { "application/json": { schema: errorSchema } },
});

/** The error answers of a route behind `access()`, with the route's own extras. */
export function errorResponses(
  extra: Partial<Record<400 | 404 | 409 | 413 | 422 | 502 | 503, string>> = {},
) {
  return {
    400: error(extra[400] ?? "The request was malformed or had invalid parameters."),
    401: error("The Authorization header is missing, or the token is invalid, expired or revoked."),
    403: error("The caller is authenticated but not allowed to do this in this project."),
    404: error(extra[404] ?? "The project does not exist."),
    ...(extra[409] ? { 409: error(extra[409]) } : {}),
    ...(extra[413] ? { 413: error(extra[413]) } : {}),
    ...(extra[422] ? { 422: error(extra[422]) } : {}),
    ...(extra[502] ? { 502: error(extra[502]) } : {}),
    ...(extra[503] ? { 503: error(extra[503]) } : {}),
  };
}

export const bearerAuth = [{ bearerAuth: [] }];

export const projectIdParam = z.object({
  projectId: z.string().openapi({ param: { name: "projectId", in: "path" }, example: "prj_…" }),
});

/**
 * Turns a failed zod validation into `400 {message}` naming the field. A query parameter given
 * twice reaches zod as an array, which it called "Invalid input: expected string, received
 * array": that is said as it is, as the run API says it. A valid JSON body with a lone
 * surrogate in a string is refused too: it would be stored changed (`lone-surrogates.ts`).
 */
// biome-ignore lint/suspicious/noExplicitAny: the hook is shared by routes of every input type.
export const validationHook: Hook<any, AppEnv, any, any> = (result, c) => {
  if (result.success) {
    const at = result.target === "json" ? loneSurrogateAt(result.data) : undefined;
    if (at === undefined) return;
    throw new ApiError(
      "bad_request",
      `${at}: holds half of a UTF-16 surrogate pair on its own (such as \\ud800), which UTF-8 text cannot store`,
    );
  }
  const name = result.target === "query" ? result.error.issues[0]?.path[0] : undefined;
  if (typeof name === "string" && (c.req.queries(name)?.length ?? 0) > 1)
    throw new ApiError("bad_request", `${name}: given more than once`);
  const issue = result.error.issues[0];
  if (result.target === "query" && issue?.code === "unrecognized_keys")
    throw new ApiError("bad_request", unknownQuery(issue.keys));
  throw new ApiError("bad_request", describeZodError(result.error));
};

/**
 * A query parameter a route does not take. It read "unknown field 'nextPageToken'", a body's
 * words, and a list's next page is asked for as `nextToken`, not by the name its answer gives
 * the token: a client that sent it back under that name was told nothing more.
 */
function unknownQuery(keys: PropertyKey[]): string {
  const names = keys.map((k) => `'${String(k)}'`).join(", ");
  const paging = keys.some((k) => /^(next_?page_?token|page_?token|cursor|page)$/i.test(String(k)));
  const hint = paging ? ": the next page is ?nextToken=, given the answer's nextPageToken" : "";
  return `unknown query parameter${keys.length > 1 ? "s" : ""} ${names}${hint}`;
}

export { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE };

const limitMessage = `must be an integer from 1 to ${MAX_PAGE_SIZE}`;

/** `limit` of the paginated lists: a canonical integer string, 1 to 200. */
export const pageSizeParam = z
  .string()
  .regex(/^[1-9][0-9]{0,2}$/, limitMessage)
  .transform(Number)
  .refine((n) => n <= MAX_PAGE_SIZE, limitMessage)
  .optional()
  .openapi({
    type: "string",
    example: "50",
    description: `1 to ${MAX_PAGE_SIZE}; default ${DEFAULT_PAGE_SIZE}.`,
  });

/**
 * An RFC 3339 date-time with its offset (zod's ISO check: real days, hours to 23, offsets to
 * ±23:59), its `t` and `z` taken as `T` and `Z` (RFC 3339 §5.6), and passed on in upper case.
 * `error` is the message of a value that is none.
 */
export const rfc3339Time = (error: z.core.$ZodISODateTimeParams["error"]) =>
  z
    .string()
    .transform(upperCaseTime)
    .pipe(z.iso.datetime({ offset: true, error }))
    .openapi({ type: "string", format: "date-time" });

export const SMALL_BODY_BYTES = 256 * 1024;

/** Route middleware: JSON bodies of the small routes are at most 256 KiB, else 413 `{message}`. */
export const smallBody = bodyLimit({
  maxSize: SMALL_BODY_BYTES,
  onError: () => {
    throw new ApiError("payload_too_large", "the request body is larger than 256 KiB");
  },
});
