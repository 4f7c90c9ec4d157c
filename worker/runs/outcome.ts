/** How an answer becomes a run's outcome, for sync deliveries and async runs alike. */
import type { HostRunState } from "../../common/protocol/host.ts";
import type { Outcome } from "./types.ts";

export function failed(message: string, run_time_ms: number | null = null): Outcome {
  return { status: "failure", error: { message }, run_time_ms };
}

/**
 * A custom app's answer as a run's outcome: `result` its body (JSON parsed where it is JSON,
 * else text), `status_code` its status; `failure` from 500 on, or when the body was over
 * 10 MiB (`text` undefined, not delivered).
 */
export function answerOutcome(
  status_code: number,
  contentType: string | null,
  text: string | undefined,
  run_time_ms: number | null,
): Outcome {
  const result = text === undefined ? null : appResult(text, contentType);
  if (status_code < 500 && text !== undefined)
    return { status: "success", result, status_code, run_time_ms };
  const message =
    text === undefined
      ? "the app's answer is larger than 10 MiB: not delivered"
      : `the app answered ${status_code}`;
  return { status: "failure", error: { message }, result, status_code, run_time_ms };
}

function appResult(text: string, contentType: string | null): unknown {
  if (contentType?.includes("json")) {
    try {
      return JSON.parse(text);
    } catch {
      // not JSON after all: the text as it is
    }
  }
  return text;
}

/** The outcome of an async run the host reported ended (success or failure). */
export function hostOutcome(report: HostRunState): Outcome {
  const run_time_ms = report.runTimeMs ?? null;
  const { http } = report;
  if (http) return answerOutcome(http.status_code, http.content_type, http.body, run_time_ms);
  if (report.status === "success") return { status: "success", result: report.result, run_time_ms };
  return failed(report.error?.message ?? "the run failed", run_time_ms);
}
