/**
 * Which methods a Hono app's own routes take on a path: for a 405's `Allow` and message, derived
 * from the routes themselves rather than a table kept beside them. The control plane and the
 * Worker each ask their app (types only from Hono: nothing here is bundled twice).
 */
import type { Hono } from "hono";
import type { Env } from "hono/types";

/** The order methods are named in, in `Allow` and in messages; others follow, sorted. */
const ORDER = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"];
const rank = (method: string) => (ORDER.includes(method) ? ORDER.indexOf(method) : ORDER.length);

/**
 * The methods `app`'s routes take on `path`, as its own router matches them (the same `:param`
 * patterns, regular expressions and trailing slashes); middleware and `all` routes left out. A
 * route that takes GET takes HEAD too: Hono answers a HEAD with the GET, without its body.
 */
export function allowedMethods<E extends Env>(app: Hono<E>, path: string): string[] {
  const candidates = new Set(app.routes.map((r) => r.method).filter((m) => m !== "ALL"));
  const allowed = [...candidates].filter((method) =>
    app.router.match(method, path)[0].some(([[, route]]) => route.method !== "ALL"),
  );
  if (allowed.includes("GET")) allowed.push("HEAD");
  return allowed.sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
}

/** The 405's message: `PUT is not allowed on /v2/…/audit-log; it takes GET` (HEAD goes unsaid). */
export function notAllowedMessage(method: string, path: string, allowed: string[]): string {
  const named = allowed.filter((m) => m !== "HEAD").join(", ");
  return `${method} is not allowed on ${path}; it takes ${named}`;
}
