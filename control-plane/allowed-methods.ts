import type { Context, Hono } from "hono";
import type { Env } from "hono/types";
import { allowedMethods, notAllowedMessage } from "../common/allowed-methods.ts";
import { ApiError } from "./errors.ts";

/**
 * The answer to a request no route of `app` takes: 405 with `Allow` when the path is a route's
 * under another method, else 404 `notFound`. Thrown, so the one error handler renders it.
 */
export function refuseUnrouted<E extends Env>(app: Hono<E>, c: Context, notFound: string): never {
  const { method, path } = c.req;
  const allowed = allowedMethods(app, path);
  if (allowed.length === 0) throw new ApiError("not_found", notFound);
  c.header("allow", allowed.join(", "));
  throw new ApiError("method_not_allowed", notAllowedMessage(method, path, allowed));
}
