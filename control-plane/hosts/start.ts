/**
 * A deploy's trial (docs/hosts.md, "A deploy starts a replica first"): before a version is
 * recorded, one runtime host starts a replica of it (`POST {host}/internal/apps/{project}/{app}/trial`,
 * runtime-host/pool/trials.ts). The host asked is the first that is up in the app's rendezvous
 * order: where the Worker's placement sends the app's first calls, and where the deploy warms its
 * `min_replicas`, so the replica that started serves them. One that does not answer, or could
 * not start it for a reason of its own (its sandbox, the project's secrets, its disk: the
 * answer's `fault`), is passed over for the next.
 */
import type { AppConfig } from "../../common/app-config.ts";
import { DEFAULT_START_TIMEOUT_S } from "../../common/app-limits.ts";
import {
  type DeployRequest,
  type OutputLine,
  type TrialAnswer,
  type TrialRequest,
  trialAnswerSchema,
} from "../../common/protocol/deploy.ts";
import { hostPath } from "../../common/protocol/paths.ts";
import { rendezvousOrder } from "../../common/rendezvous.ts";
import type { LiveHost } from "./registry.ts";

export type StartOutcome =
  /** `exports`: a managed app's functions, as the host said them (an older host does not). */
  | { state: "started"; host: string; ms: number; exports?: string[] }
  /** The app's own failure: it did not start (`message` as its calls would have said it). */
  | { state: "failed"; host: string; message: string; output: OutputLine[] }
  /**
   * No host could start it: none is up, or none of those up answered, or could start it for a
   * reason of its own (`reasons`, per host).
   */
  | { state: "unavailable"; reasons: string[] };

/**
 * How long a host may take to take the version (its upload, its files written) before the head
 * of its answer: past it, the host is passed over. As long as a host's fetch of a bundle may take.
 */
const HEAD_MS = 60_000;
/**
 * How long the rest of the answer may take beyond the app's `start_timeout`: the host bounds the
 * start itself (by that limit), after a spare and the project's secrets; this only ends the wait
 * for a host gone silent. At a fixed 90 s, a start of 120 s was cut here though the host allowed it.
 * (The head comes before the start, so `HEAD_MS` does not grow with it.)
 */
const ANSWER_MARGIN_MS = 60_000;

/** How long the answer may take after its head, for a version whose config is `config`. */
export const answerMs = (config: Pick<AppConfig, "start_timeout">) =>
  (config.start_timeout ?? DEFAULT_START_TIMEOUT_S) * 1000 + ANSWER_MARGIN_MS;

/** Asks the hosts that are up, in the app's order, until one starts the version or says why not. */
export async function startOnHost(
  hosts: readonly LiveHost[],
  internalToken: string,
  {
    project,
    app,
    digest,
    bundle,
  }: { project: string; app: string; digest: string; bundle: DeployRequest },
): Promise<StartOutcome> {
  const up = rendezvousOrder(
    `${project}/${app}`,
    hosts.filter((h) => h.state === "up"),
  );
  const request: TrialRequest = { ...bundle, digest };
  const body = JSON.stringify(request);
  const reasons: string[] = [];
  for (const host of up) {
    const path = hostPath.trial(project, app);
    const answer = await ask(host, path, body, internalToken, answerMs(bundle.config));
    if (typeof answer === "string") {
      reasons.push(`${host.id} ${answer}`);
      continue;
    }
    if (answer.started) {
      const { ms, exports } = answer;
      return { state: "started", host: host.id, ms, ...(exports ? { exports } : {}) };
    }
    if (answer.fault === "host") {
      reasons.push(`${host.id}: ${answer.message}`);
      continue;
    }
    return { state: "failed", host: host.id, message: answer.message, output: answer.output };
  }
  return { state: "unavailable", reasons };
}

/** The host's trial answer, or why there is none (what the host said, or that it was silent). */
async function ask(
  host: LiveHost,
  path: string,
  body: string,
  internalToken: string,
  answerWithinMs: number,
): Promise<TrialAnswer | string> {
  const abort = new AbortController();
  let timer = setTimeout(() => abort.abort(), HEAD_MS);
  try {
    const res = await fetch(host.address + path, {
      method: "POST",
      headers: { authorization: `Bearer ${internalToken}`, "content-type": "application/json" },
      body,
      signal: abort.signal,
    });
    clearTimeout(timer);
    timer = setTimeout(() => abort.abort(), answerWithinMs);
    const text = await res.text().catch(() => undefined);
    if (abort.signal.aborted)
      return "did not say within its start limit whether the replica started";
    // A host that stops mid-trial closes the connection after its 200's head.
    if (text === undefined)
      return `went away mid-answer (its connection closed after its ${res.status}'s head, before it said whether the replica started: did it stop?)`;
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      // not JSON: no trial's answer
    }
    const parsed = res.ok ? trialAnswerSchema.safeParse(json) : undefined;
    if (parsed?.success) return parsed.data;
    // A host older than this control plane has no trial route.
    if (res.status === 404 || res.status === 405)
      return "cannot start a version before it is deployed (a runtime host older than the control plane?)";
    const said = (json as { message?: unknown } | undefined)?.message;
    return `answered ${res.status}${typeof said === "string" ? `: ${said}` : " without a trial's answer"}`;
  } catch {
    return abort.signal.aborted ? "did not answer in time" : "could not be reached";
  } finally {
    clearTimeout(timer);
  }
}
