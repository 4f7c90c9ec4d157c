/**
 * Refusals cross the Durable Object boundary as values (a thrown error loses its class there):
 * the shard returns one, the route throws it again as the `RunApiError` it was.
 */
import { RunApiError } from "../errors.ts";
import type { Refusal } from "./types.ts";

export function refusal(
  status: Refusal["refused"]["status"],
  message: string,
  runId?: string,
): Refusal {
  return { refused: { status, message, ...(runId ? { runId } : {}) } };
}

/** The answer, or the refusal as the `RunApiError` it was. */
export function viewOrThrow<T extends object>(answer: T): Exclude<T, Refusal> {
  if ("refused" in answer) {
    const { status, message, runId } = (answer as Refusal).refused;
    const err = new RunApiError(status, message);
    err.runId = runId;
    throw err;
  }
  return answer as Exclude<T, Refusal>;
}
