// A run call made while the control plane restarts (killed, and brought back by `runlet start`
// within a second or two) whose token and app were not cached: it was a 502 "the control plane
// is not reachable" at once, and ran nothing. A refused connection is now tried again.
import { fetchMock } from "cloudflare:test";
import { afterEach, beforeAll, expect, it } from "vitest";
import {
  appIsDeployed,
  CONTROL,
  call,
  expectUpstreamsUsed,
  hostAnswers,
  PROJECT,
  setUpUpstreams,
  sign,
} from "./test-support.ts";

beforeAll(setUpUpstreams);
afterEach(expectUpstreamsUsed);

/** The control plane refuses the connection for `app`: once, or every time (`times` absent). */
function away(app: string, times?: number) {
  const refused = fetchMock
    .get(CONTROL)
    .intercept({ path: `/v2/projects/${PROJECT}/apps/${app}` })
    .replyWithError(new Error("connect ECONNREFUSED"));
  if (times) refused.times(times);
  else refused.persist();
}

it("runs a call made while the control plane restarts, once it answers", async () => {
  const token = await sign();
  away("hello", 1);
  appIsDeployed("hello");
  hostAnswers(200, { ok: true, result: "ran", run_time_ms: 3 });
  const { res, body } = await call(`/v4/${PROJECT}/hello/run`, {
    headers: { authorization: `Bearer ${token}` },
  });
  expect(res.status).toBe(200);
  expect(body.result).toBe("ran");
});

it("still answers 502 when the control plane stays away", async () => {
  const token = await sign();
  // Every try of the test's 1 s of patience (CONTROL_PLANE_PATIENCE_MS), 250 ms apart.
  away("gone");
  const { res, body } = await call(`/v4/${PROJECT}/gone/run`, {
    headers: { authorization: `Bearer ${token}` },
  });
  expect(res.status).toBe(502);
  expect(body.message).toBe("the control plane is not reachable");
});
