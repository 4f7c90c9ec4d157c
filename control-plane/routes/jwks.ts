import type { Hono } from "hono";
import type { AppEnv } from "../context.ts";

/** The public keys that verify Runlet tokens; the Worker fetches and caches this. */
export function registerJwks(app: Hono<AppEnv>) {
  app.get("/.well-known/jwks.json", (c) => {
    c.header("cache-control", "public, max-age=300");
    return c.json(c.var.deps.keys.jwks);
  });
}
