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
