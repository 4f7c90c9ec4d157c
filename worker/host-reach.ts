/**
 * Whether a sync call may be sent to a host, as far as the Worker can tell before it sends it
 * (docs/hosts.md, "Placement"). fetch does not tell a connection refused from one cut while the
 * host ran the call, so a call whose connection failed may have run, and is not sent again. A
 * host registered at an address the Worker cannot reach (a wrong `--address`, a firewall) stayed
 * `up`, and about one call in fifty to its apps failed 502 until each isolate steered away from
 * it. So before its first call to a host (and its first after a call there failed to connect),
 * an isolate asks the host's `/healthz`. A host that cannot be connected to never got the call:
 * the call goes to the next host, and the registry is told (`POST /internal/hosts/{id}/
 * unreachable`), which lists the host unreachable and has every isolate pass it over for a minute
 * (`UNREACHABLE_MS`), or until the host registers again.
 */
import type { UnreachableReport } from "../common/protocol/hosts.ts";
import { controlPlanePath } from "../common/protocol/paths.ts";
import { controlPlaneFetch } from "./control-plane.ts";
import type { Env } from "./env.ts";
import { answered, suspect, type Target, wasReached } from "./placement.ts";

/** How long the first health check of a host waits for its answer. */
const FIRST_CHECK_MS = 5_000;

/** Work that may outlive the caller's answer (the request's `waitUntil`). */
export type Background = (work: Promise<unknown>) => void;

/**
 * Whether the call may go to `host`: it answered this isolate before, or answers its health
 * check now (any answer: it connected). If not, the host is passed over and the registry told;
 * the reason is returned, and the call was not sent.
 */
export async function reachable(
  env: Env,
  host: Target,
  background: Background,
): Promise<{ ok: true } | { ok: false; error: string }> {
  if (wasReached(host.url)) return { ok: true };
  const checkedAt = Date.now();
  const error = await connectError(host.url);
  if (error === undefined) {
    answered(host.url);
    return { ok: true };
  }
  suspect(host.url);
  if (host.id) background(tellRegistry(env, host.id, { error, checkedAt }));
  return { ok: false, error };
}

/** Why `url` could not be connected to; undefined if it answered. */
async function connectError(url: string): Promise<string | undefined> {
  try {
    const res = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(FIRST_CHECK_MS) });
    await res.body?.cancel();
    return undefined;
  } catch (err) {
    const timedOut = err instanceof Error && err.name === "TimeoutError";
    const why = timedOut
      ? `no answer within ${FIRST_CHECK_MS / 1000} s`
      : err instanceof Error
        ? err.message
        : String(err);
    return `the Worker could not connect to ${url} (${why})`.slice(0, 500);
  }
}

async function tellRegistry(env: Env, hostId: string, report: UnreachableReport): Promise<void> {
  try {
    const res = await controlPlaneFetch(env, controlPlanePath.unreachable(hostId), {
      method: "POST",
      headers: {
        authorization: `Bearer ${env.INTERNAL_TOKEN}`,
        "content-type": "application/json",
      },
      body: JSON.stringify(report),
      signal: AbortSignal.timeout(FIRST_CHECK_MS),
    });
    await res.body?.cancel();
  } catch {
    // The registry not told: this isolate passes the host over all the same (suspect).
  }
}
