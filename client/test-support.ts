/** What the client's tests share (client/client.test.ts, test/client.test.ts). */
import { expect } from "vitest";
import { RunletError } from "./index.mjs";

/** The RunletError a promise rejects with. */
export async function failure(promise: Promise<unknown>): Promise<RunletError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(RunletError);
  return err as RunletError;
}
