/**
 * A Node control plane behind a reverse proxy on its machine (docs/deploy.md): with
 * RUNLET_TRUST_PROXY=1 the caller's address is the one the proxy appended to X-Forwarded-For
 * (the last: what came before it, the caller may have written), and the scheme of the links it
 * makes is the proxy's X-Forwarded-Proto. Without it both headers are ignored: a caller could
 * write them.
 */
import type { Context } from "hono";

/** The caller's address: the proxy's last X-Forwarded-For entry, else the socket's peer. */
export function callerAddress(c: Context, peer: string | undefined, trustProxy: boolean) {
  if (!trustProxy) return peer;
  const forwarded = c.req.header("x-forwarded-for")?.split(",").at(-1)?.trim();
  return forwarded || peer;
}

/** This control plane's origin as its caller reached it. */
export function publicOrigin(c: Context, trustProxy: boolean): string {
  const url = new URL(c.req.url);
  const proto = trustProxy ? c.req.header("x-forwarded-proto")?.split(",")[0]?.trim() : undefined;
  if (proto === "https" || proto === "http") url.protocol = `${proto}:`;
  return url.origin;
}
