/**
 * How long the Worker waits for a runtime host's answer to a call (worker/host.ts), and so how
 * long a sync call's Idempotency-Key stays leased (worker/idempotency.ts).
 */
import type { Env } from "./env.ts";

/**
 * An app's `start_timeout` when the control plane does not say it (older than the field): as
 * `DEFAULT_START_TIMEOUT_S` of common/app-config.ts, which is not imported, as it would bring
 * the whole config schema (zod) into the Worker's bundle.
 */
const DEFAULT_START_S = 30;

/**
 * The longest a host takes to answer a call of an app whose replicas may take `startTimeout`
 * seconds to start: its wait for a replica slot (30 s, counted from the app's first replica
 * ready: up to `startTimeout` more while it starts), the start of the replica it gets
 * (`startTimeout`) and the call's own limit (5 min), with a margin. A host silent past it is
 * wedged: the caller hears 504 instead of waiting for ever (`HOST_ANSWER_MS` sets it in tests).
 * At a fixed 390 s, a call of an app whose start takes 10 minutes was cut while the host started it.
 */
export const longestHostAnswerMs = (startTimeout = DEFAULT_START_S) =>
  (30 + 2 * startTimeout + 300 + 30) * 1000;
export const hostAnswerMs = (env: Env, startTimeout?: number) =>
  Number(env.HOST_ANSWER_MS) || longestHostAnswerMs(startTimeout);
