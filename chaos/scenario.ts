/** What a chaos scenario is: something done to a running stack, and what came of it. */
import type { Runlet } from "../test/harness.ts";
import type { Receiver } from "../test/receiver.ts";

export interface Outcome {
  observed: string;
  ok: boolean;
}

export interface Scenario {
  name: string;
  expected: string;
  /** Skips the scenario (with the reason) when it does not apply here. */
  skip?: () => string | undefined;
  run(stack: Runlet, receiver: Receiver): Promise<Outcome>;
}

/** A run view's or an answer's error as text: `{message}` objects or plain strings. */
export const errorText = (error: unknown): string =>
  typeof error === "object" && error !== null
    ? String((error as { message?: unknown }).message ?? JSON.stringify(error))
    : String(error);
