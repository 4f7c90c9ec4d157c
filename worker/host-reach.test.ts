/**
 * A host the Worker cannot connect to (worker/host-reach.ts): before its first call there an
 * isolate asks the host's /healthz; a host not connected to never got the call, so the call goes
 * to the next host, and the registry is told. Until 2026-11-27 the call was sent, failed 502 "may
 * have run there", and the host stayed `up` for every other isolate.
 */
import { env, fetchMock } from "cloudflare:test";
import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { PlacementHost } from "../common/protocol/hosts.ts";
import type { Env } from "./env.ts";
import { invokeOnHost } from "./host.ts";
import { forwardToHost } from "./host-forward.ts";
import { forgetPlacement, hostsFor } from "./placement.ts";
import { CONTROL } from "./routes/test-support.ts";

const workerEnv = env as unknown as Env;
const INVOKE = "/internal/invoke/prj/svc/run";

beforeAll(() => {
  fetchMock.activate();
  fetchMock.disableNetConnect();
  fetchMock.get("http://up.test").intercept({ path: "/healthz" }).reply(200, "ok").persist();
});
beforeEach(() => forgetPlacement());

/** A host of the registry; `warm`: the app has a free replica there (it comes first). */
function host(id: string, warm = false, over: Partial<PlacementHost> = {}): PlacementHost {
  const apps = warm ? [{ project: "prj", app: "svc", replicas: 1, ready: 1, busy: 0 }] : [];
  return {
    id,
    address: `http://${id}.test`,
    state: "up",
    slots: 10,
    busy: 0,
    queued: 0,
    apps,
    ...over,
  };
}

const registry = (hosts: PlacementHost[]) =>
  fetchMock.get(CONTROL).intercept({ path: "/internal/hosts" }).reply(200, { hosts });

/** Host `id` refuses connections (its /healthz, and anything else sent there). */
const refusing = (id: string) =>
  fetchMock
    .get(`http://${id}.test`)
    .intercept({ path: "/healthz" })
    .replyWithError(new Error("connect ECONNREFUSED"));

/** The registry's reports of unreachable hosts: path, authorization and body. */
function reports() {
  const told: Array<{ path: string; auth: string | null; body: unknown }> = [];
  fetchMock
    .get(CONTROL)
    .intercept({ path: /^\/internal\/hosts\/[^/]+\/unreachable$/, method: "POST" })
    .reply(({ path, headers, body }) => {
      const auth = new Headers(headers as HeadersInit).get("authorization");
      told.push({ path, auth, body: JSON.parse(String(body)) });
      return { statusCode: 204, data: "" };
    });
  return told;
}

const call = (runId: string) =>
  invokeOnHost(
    workerEnv,
    { project: "prj", app: "svc", fn: "run", runId, concurrency: 1 },
    new TextEncoder().encode("{}").buffer as ArrayBuffer,
  );

describe("a host the Worker cannot connect to", () => {
  it("gets no call: the call goes to the next host, and the registry is told", async () => {
    registry([host("gone", true), host("up")]);
    refusing("gone"); // no call set up there: one sent would fail unmocked
    const told = reports();
    fetchMock
      .get("http://up.test")
      .intercept({ path: INVOKE, method: "POST" })
      .reply(200, { ok: true, result: "served", run_time_ms: 1 });
    const answer = await call("run_a");
    expect(answer).toMatchObject({ ok: true, result: "served", host: { id: "up" } });
    await expect.poll(() => told.length).toBe(1);
    expect(told[0]).toEqual({
      path: "/internal/hosts/gone/unreachable",
      auth: `Bearer ${env.INTERNAL_TOKEN}`,
      body: {
        error: expect.stringMatching(
          /^the Worker could not connect to http:\/\/gone\.test \(.*ECONNREFUSED.*\)$/,
        ),
        checkedAt: expect.any(Number),
      },
    });
    // Passed over by this isolate from now on.
    expect((await hostsFor(workerEnv, "prj", "svc")).map((t) => t.id)).toEqual(["up"]);
  });

  it("sends a custom app's POST, body and all, to the next host", async () => {
    registry([host("gone", true), host("up")]);
    refusing("gone");
    reports();
    fetchMock
      .get("http://up.test")
      .intercept({ path: "/internal/http/prj/svc/echo", method: "POST", body: '{"n":1}' })
      .reply(200, "echoed");
    const request = new Request("http://worker.test/v4/prj/svc/echo", {
      method: "POST",
      body: '{"n":1}',
    });
    const target = { project: "prj", app: "svc", pathAndQuery: "/echo", runId: "run_b" };
    const { answer, host: reached } = await forwardToHost(
      workerEnv,
      { ...target, concurrency: 1 },
      request,
    );
    expect(await answer.text()).toBe("echoed");
    expect(reached.id).toBe("up");
  });

  it("answers 502 saying the call was not sent when no host could be connected to", async () => {
    registry([host("gone", true)]);
    refusing("gone");
    reports();
    await expect(call("run_c")).rejects.toMatchObject({
      status: 502,
      message: expect.stringMatching(
        /^no runtime host could be reached: the Worker could not connect to http:\/\/gone\.test .*; the call was not sent, so it did not run\. Try again shortly$/,
      ),
      host: { id: "gone" },
    });
  });

  it("answers a host's refusal (nothing ran there) when the next host cannot be connected to", async () => {
    // The far host last: the app's replica is warm on the first, which is busy and says so.
    registry([host("up", true), host("gone")]);
    refusing("gone");
    reports();
    fetchMock
      .get("http://up.test")
      .intercept({ path: INVOKE, method: "POST" })
      .reply(429, { message: "busy here", code: "too_many_requests", elsewhere: true });
    await expect(call("run_d")).rejects.toMatchObject({
      status: 429,
      message: "busy here",
      host: { id: "up" },
    });
  });

  it("is passed over by every isolate while the registry has it unreachable", async () => {
    const unreachable = { at: Date.now(), error: "the Worker could not connect to …" };
    registry([host("gone", true, { unreachable }), host("up")]);
    expect((await hostsFor(workerEnv, "prj", "svc")).map((t) => t.id)).toEqual(["up"]);
  });
});
