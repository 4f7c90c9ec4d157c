// How long the Worker waits for a runtime host's answer to a call: long enough for the app's
// start_timeout, twice (its queued call waits for the app's first start, then may get a replica
// of its own to start), the 30 s wait for a slot and the call's 5 minutes.
import { env } from "cloudflare:test";
import { expect, it } from "vitest";
import { hostAnswerMs } from "./host-answer.ts";

it("grows with the app's start_timeout, 30 s when the control plane does not say it", () => {
  const real = { ...env, HOST_ANSWER_MS: undefined };
  expect(hostAnswerMs(real)).toBe((30 + 60 + 300 + 30) * 1000);
  expect(hostAnswerMs(real, 600)).toBe((30 + 1200 + 300 + 30) * 1000);
  expect(hostAnswerMs(env, 600)).toBe(1000); // the tests' own bound (vitest.config.ts)
});
