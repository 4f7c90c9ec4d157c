/**
 * How long the Worker waits for a runtime host's answer to a call (worker/host.ts), and so how
 * long a sync call's Idempotency-Key stays leased (worker/idempotency.ts).
 */
import { longestHostAnswerMs } from "../common/app-limits.ts";
import type { Env } from "./env.ts";

export const hostAnswerMs = (env: Env, startTimeout?: number) =>
  Number(env.HOST_ANSWER_MS) || longestHostAnswerMs(startTimeout);
