/**
 * How long the Worker waits for a runtime host's answer to a call (worker/host.ts), and so how
 * long a sync call's Idempotency-Key stays leased (worker/idempotency.ts).
 */
import { DEFAULT_START_TIMEOUT_S } from "../common/app-limits.ts";
import type { Env } from "./env.ts";

/**
 * The longest a host takes to answer a call of an app whose replicas may take `startTimeout`
 * seconds to start: its wait for a replica slot (30 s, counted from the app's first replica
 * ready: up to `startTimeout` more while it starts), the start of the replica it gets
 * (`startTimeout`) and the call's own limit (5 min), with a margin. A host silent past it is
 * wedged: the caller hears 504 instead of waiting for ever (`HOST_ANSWER_MS` sets it in tests).
 * At a fixed 390 s, a call of an app whose start takes 10 minutes was cut while the host started it.
 */
// Without a startTimeout, the control plane is older than the field: the default it has now.
export const longestHostAnswerMs = (startTimeout = DEFAULT_START_TIMEOUT_S) =>
  (30 + 2 * startTimeout + 300 + 30) * 1000;
export const hostAnswerMs = (env: Env, startTimeout?: number) =>
  Number(env.HOST_ANSWER_MS) || longestHostAnswerMs(startTimeout);
