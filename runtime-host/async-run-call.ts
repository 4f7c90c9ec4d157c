/**
 * What an async run does once it has its replica: call the function, or send the custom app its
 * request, within the app's `response_grace_period`; and how the run ended, as the `HostRun`
 * fields to set.
 */

import { jsonBytesOver } from "../common/bytes.ts";
import { noFunction } from "../common/no-function.ts";
import type { HostRun } from "../common/protocol/host.ts";
import type { Deployment } from "./apps.ts";
import { MAX_INVOKE_BODY_BYTES } from "./limits.ts";
import { functionWorkload, httpWorkload, type Workload, WorkloadError } from "./pool/workload.ts";
import { msSince } from "./runs/describe.ts";
import type { AsyncCall } from "./runs/types.ts";
import { AppAnswerError, sendBuffered } from "./runtimes/custom/buffered.ts";

export type RunEnd = Pick<HostRun, "status" | "result" | "http" | "error" | "runTimeMs">;

/** Runs the call on its replica; `signal` aborts once the run is cancelled. */
export async function runCall(
  workload: Workload,
  deployment: Deployment,
  call: AsyncCall,
  signal: AbortSignal,
): Promise<RunEnd> {
  const limitMs = deployment.config.response_grace_period * 1000;
  const started = performance.now();
  if ("http" in call) {
    const keep = !call.noResult;
    const http = await sendBuffered(httpWorkload(workload), call.http, limitMs, signal, keep);
    const runTimeMs = msSince(started);
    if (http.status_code < 500) return { status: "success", http, runTimeMs };
    const error = { message: `the app answered ${http.status_code}` };
    return { status: "failure", http, runTimeMs, error };
  }
  const { runId, fn, payload, noResult } = call;
  const outcome = await functionWorkload(workload).invoke(
    { runId, fn, payload, async: true, signal },
    limitMs,
  );
  const runTimeMs = msSince(started);
  switch (outcome.kind) {
    case "returned": {
      // Without a webhook nobody reads it, and it is not kept.
      if (noResult) return { status: "success", result: null, runTimeMs };
      // Its one reader is the webhook, which takes what a custom app's answer may be: 10 MiB.
      // A larger one overflowed the Worker's 32 MiB RPC limit on the way to the run store.
      const bytes = jsonBytesOver(outcome.value, MAX_INVOKE_BODY_BYTES);
      if (bytes === undefined) return { status: "success", result: outcome.value, runTimeMs };
      const message = `the function's result is larger than 10 MiB (${bytes} bytes as JSON): an async run's result goes to its webhook, which takes at most 10 MiB`;
      return { status: "failure", runTimeMs, error: { message } };
    }
    case "threw":
      return { status: "failure", runTimeMs, error: { message: outcome.message } };
    case "not-found": {
      const message = noFunction(deployment.app, fn, outcome.exports);
      return { status: "failure", runTimeMs, error: { message } };
    }
  }
}

/** A run that failed outside the app's code (its replica, its limit): a message safe to show. */
export function failureOf(err: unknown, deployment: Deployment): RunEnd {
  const known = err instanceof WorkloadError || err instanceof AppAnswerError;
  if (!known) console.error("runtime host: async run failed:", err);
  const message =
    err instanceof WorkloadError && err.failure.kind === "timeout"
      ? `the run exceeded the app's response_grace_period (${deployment.config.response_grace_period} s) and was stopped`
      : known
        ? err.message
        : "internal error";
  return { status: "failure", error: { message } };
}
