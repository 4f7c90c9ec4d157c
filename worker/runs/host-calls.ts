/**
 * The run store's requests to the runtime host: hand a queued run over, ask about a running
 * one, cancel one. Each answer is classified for the shard; none of these throws.
 */
import { HEADER } from "../../common/consts.ts";
import {
  type HostRunState,
  hostRunStateSchema,
  knownRunSchema,
} from "../../common/protocol/host.ts";
import { hostPath, workerPath } from "../../common/protocol/paths.ts";
import type { Env } from "../env.ts";
import { hostError } from "../host-call.ts";
import { type OpenCall, placeCall, suspect, type Target } from "../placement.ts";
import type { QueuedRun, ShardInfo } from "./rows.ts";
import type { AppRequest } from "./types.ts";

/**
 * How long the host may hold its answer to a hand-over for the run's end once it started: a
 * run that ends sooner goes from queued straight to its end, with one write and no callback.
 */
export const HOST_WAIT_MS = 100;

export type HandOver =
  /** 202: the run has a replica and runs; its end comes by the callback. */
  | { kind: "started"; run: HostRunState }
  /** 200: it started and ended while the host held the answer. */
  | { kind: "ended"; run: HostRunState }
  /** 409: the host knows this run already (an earlier hand-over reached it): its state. */
  | { kind: "known"; run: HostRunState }
  /** Busy (429), stopping or unreachable: the run stays queued and is handed over later. */
  | { kind: "later"; message: string }
  /**
   * 502 elsewhere: the host could not start a replica for a reason of its own (its sandbox, the
   * project's secrets, the version's files); nothing ran. The run stays queued for another host.
   */
  | { kind: "elsewhere"; message: string }
  /** The host will not run it (the app is gone, the request is refused): the run fails. */
  | { kind: "refused"; message: string }
  /** The shard called it off (cancelled, expired): the host forgets a run not yet started. */
  | { kind: "withdrawn" };

const internal = (env: Env) => ({ authorization: `Bearer ${env.INTERNAL_TOKEN}` });

/** The run in a host's answer, or undefined (logged) if the body is not one. */
async function runOf(answer: Response): Promise<HostRunState | undefined> {
  const parsed = hostRunStateSchema.safeParse(await answer.json().catch(() => undefined));
  if (parsed.success) return parsed.data;
  console.error(`[runs] the runtime host answered ${answer.status} without a run`);
  return undefined;
}

/**
 * Hands a queued run to the host. The host answers once the run has a replica slot (it waits
 * in the app's queue there first, oldest run first); closing this request before then
 * (`signal`) withdraws it.
 */
export async function handOver(
  env: Env,
  host: Target,
  run: {
    id: string;
    project: string;
    app: string;
    fn: string;
    appId?: string | null;
    /** It has a webhook: the host reports its result (without one, nobody reads it). */
    hooked?: boolean;
  },
  payload: ArrayBuffer | null,
  request: AppRequest | null,
  callbackUrl: string,
  signal: AbortSignal,
): Promise<HandOver> {
  const headers = {
    ...internal(env),
    [HEADER.runId]: run.id,
    [HEADER.callbackUrl]: callbackUrl,
    [HEADER.waitMs]: String(HOST_WAIT_MS),
    ...(run.appId ? { [HEADER.appId]: run.appId } : {}),
    ...(run.hooked === false ? { [HEADER.noResult]: "1" } : {}),
  };
  let answer: Response;
  try {
    answer = await fetch(
      host.url +
        (request
          ? hostPath.asyncHttp(run.project, run.app, request.pathAndQuery)
          : hostPath.async(run.project, run.app, run.fn)),
      {
        method: request?.method ?? "POST",
        headers: request
          ? { ...request.headers, ...headers }
          : { ...headers, "content-type": "application/json" },
        body: request?.method === "GET" || request?.method === "HEAD" ? undefined : payload,
        signal,
      },
    );
  } catch {
    if (signal.aborted) return { kind: "withdrawn" };
    // Refused (nothing ran), or cut after the host took the run, which it may have started: the
    // host is asked first, and a run it knows stays there rather than running twice elsewhere.
    const asked = await askHost(env, host.url, run.id);
    if (asked.kind === "state") return { kind: "known", run: asked.run };
    suspect(host.url); // the next hand-over goes to another host, if there is one
    return { kind: "later", message: "the runtime host is not reachable" };
  }
  const { status } = answer;
  if (status === 200 || status === 202) {
    const run = await runOf(answer);
    if (!run) return { kind: "later", message: "the runtime host's answer was not a run" };
    return { kind: status === 200 ? "ended" : "started", run };
  }
  if (status === 409) {
    const known = knownRunSchema.safeParse(
      await answer
        .clone()
        .json()
        .catch(() => undefined),
    );
    if (known.success) return { kind: "known", run: known.data.run };
  }
  if (status === 502) {
    const body = (await answer
      .clone()
      .json()
      .catch(() => ({}))) as { elsewhere?: unknown };
    if (body.elsewhere === true)
      return { kind: "elsewhere", message: (await hostError(answer)).message };
  }
  const { message } = await hostError(answer);
  if (status === 401 || status === 403) {
    // Our own internal token is wrong: a misconfiguration to fix, not the run's fault.
    console.error(`[runs] the runtime host refused the internal token (${status}): ${message}`);
    return { kind: "later", message };
  }
  if (status === 429 || status >= 500) return { kind: "later", message };
  return { kind: "refused", message };
}

/**
 * Hands a queued run to the best host for its app (placement.ts: the app's free slots on each,
 * `concurrency` calls a replica), telling `sentTo` where it went first (a cancel meanwhile asks
 * that host; the row notes it with the host's answer); no host up: later. `passedOver`: the
 * hosts that could not start a replica for it (elsewhere), and why the last could not; with
 * every host up among them the run is refused with that reason.
 */
export async function handOverToBest(
  env: Env,
  info: ShardInfo,
  run: QueuedRun,
  signal: AbortSignal,
  sentTo: (host: Target, open: OpenCall) => void,
  concurrency: number,
  passedOver?: { urls: ReadonlySet<string>; message: string },
): Promise<HandOver> {
  const { hosts, open } = await placeCall(
    env,
    { project: info.project, app: info.app, concurrency, capacity: info.capacity },
    (url) => passedOver?.urls.has(url) === true,
  );
  const host = hosts[0];
  if (!host && passedOver) return { kind: "refused", message: passedOver.message };
  if (!host) return { kind: "later", message: "no runtime host is up" };
  sentTo(host, open);
  const callbackUrl = info.origin + workerPath.runEnd(info.project, info.app, run.id);
  const target = {
    id: run.id,
    project: info.project,
    app: info.app,
    fn: run.fn,
    appId: run.app_id,
    hooked: run.hooked === 1,
  };
  return handOver(env, host, target, run.payload, run.request, callbackUrl, signal);
}

export type HostAnswer =
  | { kind: "state"; run: HostRunState }
  /** The host does not know the run: it restarted, or never had it. */
  | { kind: "lost" }
  | { kind: "silent" };

/** Asks the host about a run whose end has not come (a lost callback, a lost host). */
export async function askHost(env: Env, hostUrl: string, runId: string): Promise<HostAnswer> {
  try {
    const answer = await fetch(hostUrl + hostPath.run(runId), {
      headers: internal(env),
      signal: AbortSignal.timeout(10_000),
    });
    if (answer.ok) {
      const run = await runOf(answer);
      return run ? { kind: "state", run } : { kind: "silent" };
    }
    await answer.body?.cancel();
    return answer.status === 404 ? { kind: "lost" } : { kind: "silent" };
  } catch {
    return { kind: "silent" };
  }
}

/**
 * Stops the run on the host (its ctx.signal aborts); a host that does not know it is fine. The
 * run's state there, when the host had it (a run started there has its `startedAt`).
 */
export async function cancelOnHost(
  env: Env,
  hostUrl: string,
  runId: string,
): Promise<HostRunState | undefined> {
  try {
    const res = await fetch(hostUrl + hostPath.run(runId), {
      method: "DELETE",
      headers: internal(env),
      signal: AbortSignal.timeout(10_000),
    });
    const run = hostRunStateSchema.safeParse(await res.json().catch(() => undefined));
    return res.ok && run.success ? run.data : undefined;
  } catch (err) {
    console.error(`[runs] could not cancel ${runId} on the host: ${err}`);
    return undefined;
  }
}
