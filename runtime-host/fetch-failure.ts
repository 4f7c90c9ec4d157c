/**
 * Why a fetch failed, in words an operator can act on: undici says only "fetch failed", its
 * reason (`connect ECONNREFUSED 127.0.0.1:8787`, `getaddrinfo ENOTFOUND cp.example`) is in
 * `cause`. A host in another network namespace logged "could not report async run … to its
 * callback" and "heartbeat failed: fetch failed", naming neither the address nor the reason.
 */
export function whyFetchFailed(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = err.cause;
  if (cause instanceof Error && cause.message) return `${err.message}: ${cause.message}`;
  return err.message;
}
