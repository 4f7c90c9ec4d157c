import type { Context, Hono } from "hono";
import type { Env } from "hono/types";
import { ApiError } from "./errors.ts";

/** The order methods are named in, in `Allow` and in the message; others follow, sorted. */
const ORDER = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"];
const rank = (method: string) => (ORDER.includes(method) ? ORDER.indexOf(method) : ORDER.length);

/**
 * The methods `app`'s own routes take on `path`, as its router matches them (the same `:param`
 * patterns, regular expressions and trailing slashes), middleware and `app.all` fallbacks left
 * out. A route that takes GET takes HEAD too: Hono answers a HEAD with the GET, without its body.
 */
export function allowedMethods<E extends Env>(app: Hono<E>, path: string): string[] {
  const candidates = new Set(app.routes.map((r) => r.method).filter((m) => m !== "ALL"));
  const allowed = [...candidates].filter((method) =>
    app.router.match(method, path)[0].some(([[, route]]) => route.method !== "ALL"),
  );
  if (allowed.includes("GET")) allowed.push("HEAD");
  return allowed.sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
}

/**
 * The answer to a request no route of `app` takes: 405 with `Allow` when the path is a route's
 * under another method, else 404 `notFound`. Thrown, so the one error handler renders it.
 */
export function refuseUnrouted<E extends Env>(app: Hono<E>, c: Context, notFound: string): never {
  const { method, path } = c.req;
  const allowed = allowedMethods(app, path);
  if (allowed.length === 0) throw new ApiError("not_found", notFound);
  c.header("allow", allowed.join(", "));
  const named = allowed.filter((m) => m !== "HEAD").join(", ");
  throw new ApiError(
    "method_not_allowed",
    `${method} is not allowed on ${path}; it takes ${named}`,
  );
}
