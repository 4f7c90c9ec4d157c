/** How an answer becomes a run's outcome, for sync deliveries and async runs alike. */
import type { HostRunState } from "../../common/protocol/host.ts";
import type { Outcome } from "./types.ts";

export function failed(message: string, run_time_ms: number | null = null): Outcome {
  return { status: "failure", error: { message }, run_time_ms };
}

/** A custom app's answer body as it travels: text, or base64 when it is not UTF-8 text. */
export type AnswerBody = { body: string; body_encoding?: "base64" };

/**
 * A custom app's answer as a run's outcome: `result` its body (JSON parsed where it is JSON,
 * else text; a body that is not text stays base64, with `result_encoding: "base64"`),
 * `status_code` its status; `failure` from 500 on, or when the body was over 10 MiB (`answer`
 * undefined, not delivered).
 */
export function answerOutcome(
  status_code: number,
  contentType: string | null,
  answer: AnswerBody | undefined,
  run_time_ms: number | null,
): Outcome {
  const base64 = answer?.body_encoding === "base64";
  const result =
    answer === undefined
      ? { result: null }
      : base64
        ? { result: answer.body, result_encoding: "base64" as const }
        : appResult(answer.body, contentType);
  if (status_code < 500 && answer !== undefined)
    return { status: "success", ...result, status_code, run_time_ms };
  const message =
    answer === undefined
      ? "the app's answer is larger than 10 MiB: not delivered"
      : `the app answered ${status_code}`;
  return { status: "failure", error: { message }, ...result, status_code, run_time_ms };
}

/**
 * JSON is checked, not parsed into the delivery: parsed and written again, an id past 2^53
 * (12345678901234567890123) arrived as 1.2345678901234568e+22 and 1e400 as null.
 */
function appResult(text: string, contentType: string | null) {
  if (contentType?.includes("json")) {
    try {
      JSON.parse(text);
      return { result: undefined, result_json: text.trim() };
    } catch {
      // not JSON after all: the text as it is
    }
  }
  return { result: text };
}

/** A delivery's body: `outcome` with `run_id` and `timestamp`, a JSON answer's text as it came. */
export function deliveryBody(runId: string, outcome: Outcome, timestamp: string): string {
  const { result_json, ...rest } = outcome;
  if (result_json === undefined) return JSON.stringify({ run_id: runId, ...rest, timestamp });
  // A string no answer holds stands in for the result, then the text takes its place.
  const stand = `result-${crypto.randomUUID()}`;
  const body = JSON.stringify({ run_id: runId, ...rest, result: stand, timestamp });
  return body.replace(JSON.stringify(stand), () => result_json);
}

/** The outcome of an async run the host reported ended (success or failure). */
export function hostOutcome(report: HostRunState): Outcome {
  const run_time_ms = report.runTimeMs ?? null;
  const { http } = report;
  if (http) return answerOutcome(http.status_code, http.content_type, http, run_time_ms);
  if (report.status === "success") return { status: "success", result: report.result, run_time_ms };
  return failed(report.error?.message ?? "the run failed", run_time_ms);
}
