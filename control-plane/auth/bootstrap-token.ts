import { createMiddleware } from "hono/factory";
import { sameSecret } from "../../common/same-secret.ts";
import type { AppEnv } from "../context.ts";
import { users } from "../db/schema.ts";
import { ApiError } from "../errors.ts";

/** The shortest bootstrap token taken: as long as the internal token must be. */
export const MIN_BOOTSTRAP_TOKEN = 32;

/** Why a bootstrap token cannot be used, or undefined if it can. */
export function unusableBootstrapToken(token: string, internalToken?: string): string | undefined {
  if (token.length < MIN_BOOTSTRAP_TOKEN) {
    return `it must be at least ${MIN_BOOTSTRAP_TOKEN} characters`;
  }
  // Every runtime host is given the internal token when it registers.
  if (token === internalToken) return "it must not be the internal token, which every host has";
  return undefined;
}

/**
 * Route middleware of `POST /v2/init`: the bootstrap token (never the internal one), and only
 * while the control plane has no user. A wrong token is logged with the caller's address, never
 * the token.
 */
export const bootstrapOnly = createMiddleware<AppEnv>(async (c, next) => {
  const { bootstrapToken, internalToken, db } = c.var.deps;
  if (!bootstrapToken) {
    throw new ApiError(
      "forbidden",
      "this control plane has no bootstrap token (BOOTSTRAP_TOKEN on Workers, RUNLET_BOOTSTRAP_TOKEN on Node), so it takes no first user this way: see docs/deploy.md",
    );
  }
  const unusable = unusableBootstrapToken(bootstrapToken, internalToken);
  if (unusable) {
    throw new ApiError(
      "forbidden",
      `this control plane's bootstrap token is unusable: ${unusable}`,
    );
  }
  const header = c.req.header("authorization");
  if (!header) throw new ApiError("unauthorized", "missing Authorization header");
  const given = /^Bearer[ ]+(\S+)\s*$/i.exec(header)?.[1];
  if (!given) throw new ApiError("unauthorized", "Authorization header must be 'Bearer <token>'");
  if (!(await sameSecret(given, bootstrapToken))) {
    console.error(
      `[control-plane] POST /v2/init with a wrong bootstrap token, from ${c.var.deps.clientIp?.(c) ?? "an unknown address"}`,
    );
    throw new ApiError("unauthorized", "that is not this control plane's bootstrap token");
  }
  const [someone] = await db.select({ id: users.id }).from(users).limit(1);
  if (someone) throw alreadyClaimed();
  await next();
});

/** 409: the first user exists; the bootstrap token makes no other. */
export const alreadyClaimed = () =>
  new ApiError(
    "conflict",
    "this control plane already has its first user: an operator adds others (runlet users create), and the bootstrap token can be removed",
  );
