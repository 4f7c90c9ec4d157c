/**
 * Every request the Worker sends the control plane goes through here. With the service binding
 * `CONTROL_PLANE` (wrangler.toml, docs/deploy.md) it goes to the control plane's Worker
 * directly; without it, to `CONTROL_PLANE_URL` over the network. On Cloudflare a Worker cannot
 * fetch another Worker of the same account's workers.dev (error 1042), and a fetch to its own
 * zone goes to the zone's origin, past the Worker on that route: when both run on Workers, only
 * the binding reaches the control plane. Its URL still names the path, and the Host it is given.
 */
import type { Env } from "./env.ts";

export function controlPlaneFetch(env: Env, path: string, init?: RequestInit): Promise<Response> {
  const url = env.CONTROL_PLANE_URL + path;
  return env.CONTROL_PLANE ? env.CONTROL_PLANE.fetch(url, init) : fetch(url, init);
}

/** How long a control plane that refuses connections is asked again, at most. */
const REFUSED_FOR_MS = 5_000;
/** The pause between two tries. */
const AGAIN_AFTER_MS = 250;

/**
 * `controlPlaneFetch`, answered within `patienceMs` or thrown; a failure to connect is tried
 * again every 250 ms for up to 5 s of that. A control plane killed and restarted by `runlet
 * start` is back within a second or two: a call whose token or app was not cached in that
 * moment was a 502 "the control plane is not reachable", and ran nothing (by hand: the control
 * plane SIGKILLed, then at once `runlet run hello` with a new token).
 */
export async function controlPlaneFetchPatiently(
  env: Env,
  path: string,
  init: RequestInit,
  patienceMs: number,
): Promise<Response> {
  const start = Date.now();
  const deadline = start + patienceMs;
  for (;;) {
    try {
      const left = Math.max(1, deadline - Date.now());
      return await controlPlaneFetch(env, path, { ...init, signal: AbortSignal.timeout(left) });
    } catch (err) {
      const next = Date.now() + AGAIN_AFTER_MS;
      if (next >= deadline || next - start > REFUSED_FOR_MS) throw err;
      await new Promise((resolve) => setTimeout(resolve, AGAIN_AFTER_MS));
    }
  }
}
