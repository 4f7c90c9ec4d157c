import { HEADER } from "../common/consts.ts";
import { type Invocation, invocationSchema } from "../common/protocol/host.ts";
import { hostPath } from "../common/protocol/paths.ts";
import type { Env } from "./env.ts";
import { RunApiError } from "./errors.ts";
import {
  at,
  CUT_OFF,
  hostError,
  MAX_TRIES,
  NO_HOST,
  notSent,
  SILENT,
  servedElsewhere,
  started,
  waitFor,
} from "./host-call.ts";
import { type Background, reachable } from "./host-reach.ts";
import { answered, type OpenCall, placeCall, suspect, type Target } from "./placement.ts";

/**
 * Calls `fn` of an app on the best of its hosts (placement.ts), the next one if a host says it
 * cannot run the app (429 elsewhere: nothing ran) or could not be connected to before the call
 * was sent (host-reach.ts); host-level failures become `RunApiError`s.
 */
export async function invokeOnHost(
  env: Env,
  target: {
    project: string;
    app: string;
    fn: string;
    runId: string;
    concurrency: number;
    capacity?: number;
    /** The app's `start_timeout` (seconds): how long the host may take before it answers. */
    startTimeout?: number;
    /** The request's `waitUntil`: the registry told of a host not reached. */
    background?: Background;
  },
  body: ArrayBuffer,
): Promise<Invocation & { host: Target }> {
  const placed = await placeCall(env, target);
  const { open } = placed;
  const hosts = placed.hosts.slice(0, MAX_TRIES);
  if (hosts.length === 0) throw new RunApiError(502, NO_HOST);
  try {
    return await tryHosts(env, target, hosts, open, body);
  } finally {
    open.end();
  }
}

/** Sends the call to each of `hosts` in turn, as invokeOnHost says; `open` counts it there. */
async function tryHosts(
  env: Env,
  target: Parameters<typeof invokeOnHost>[1],
  hosts: Target[],
  open: OpenCall,
  body: ArrayBuffer,
): Promise<Invocation & { host: Target }> {
  const { project, app, fn, runId } = target;
  let res: Response | undefined;
  let unreached: { host: Target; error: string } | undefined;
  // A host that turned the call away unstarted, before a next host could not be connected to:
  // its answer is the caller's, as it would have been had it been the last.
  let refused: RunApiError | undefined;
  for (const [i, host] of hosts.entries()) {
    open.on(host.url);
    // A host not connected to before the call is sent never got it: the next host may.
    const reach = await reachable(env, host, target.background ?? started);
    if (!reach.ok) {
      unreached = { host, error: reach.error };
      continue;
    }
    const wait = waitFor(env, host, target.startTimeout);
    try {
      res = await fetch(host.url + hostPath.invoke(project, app, fn), {
        method: "POST",
        headers: {
          authorization: `Bearer ${env.INTERNAL_TOKEN}`,
          "content-type": "application/json",
          [HEADER.runId]: runId,
        },
        body,
        signal: wait.signal,
      });
    } catch {
      if (wait.timedOut())
        throw at(host, new RunApiError(504, "the runtime host did not answer the call in time"));
      // Unreachable, frozen, or it died with the call: the call may have run there, so it is
      // not sent again (the caller's 502); the next calls go to the other hosts.
      suspect(host.url);
      throw at(host, new RunApiError(502, wait.silent() ? SILENT : CUT_OFF));
    } finally {
      wait.end();
    }
    answered(host.url);
    // A host that cannot start a replica of the app (its replicas run on others; 502: its own
    // failure to start one, as its sandbox), or that is stopping and turned the call away
    // unstarted: the next.
    const notHere = res.status === 429 || res.status === 502 || res.status === 503;
    const refusal = notHere && i < hosts.length - 1 ? res.clone() : undefined;
    if (refusal && (await servedElsewhere(res))) {
      refused = at(host, await hostError(refusal));
      res = undefined;
      continue;
    }
    await refusal?.body?.cancel();
    if (!res.ok) throw at(host, await hostError(res));
    const invocation = invocationSchema.safeParse(await res.json().catch(() => undefined));
    if (!invocation.success)
      throw at(host, new RunApiError(502, "the runtime host's answer was not a call's"));
    return { ...invocation.data, host };
  }
  if (refused) throw refused;
  // Each host tried could not be connected to: the call was sent nowhere.
  if (unreached) throw at(unreached.host, new RunApiError(502, notSent(unreached.error)));
  throw new RunApiError(502, "the runtime host is not reachable");
}
