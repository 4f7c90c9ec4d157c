// The control plane's Workers entry over D1: keys from its secrets, answers as under Node.
import { applyD1Migrations, createExecutionContext, env } from "cloudflare:test";
import { beforeAll, expect, it, vi } from "vitest";
import { newId } from "../common/ids.ts";
import type { StoredKey } from "./auth/signing.ts";
import { d1Owner } from "./testing/d1-owner.ts";
import { strictD1 } from "./testing/strict-d1.ts";
import worker from "./worker.ts";

beforeAll(() => applyD1Migrations(env.DB, env.TEST_MIGRATIONS));

/** What the run API's Worker was asked through the service binding `RUN_API`. */
const runApiAsked: string[] = [];
const runApi = {
  async fetch(input: RequestInfo | URL, init?: RequestInit) {
    const req = new Request(input, init);
    runApiAsked.push(`${req.method} ${new URL(req.url).pathname}`);
    return Response.json({
      run_id: "run_x",
      status: "success",
      created_at: "2026-01-01T00:00:00Z",
    });
  },
} as unknown as Fetcher;

// Its secrets as `wrangler secret put` sets them, the bootstrap token included; its run API
// reached through its binding only (nothing answers at API_URL).
const secrets = {
  ...env,
  DB: strictD1(env.DB),
  BOOTSTRAP_TOKEN: "bootstrap-token-of-the-worker-0123456789",
  API_URL: "http://run-api.invalid",
  RUN_API: runApi,
};

const call = (path: string, init?: RequestInit) =>
  worker.fetch(
    new Request(`https://control.example${path}`, init),
    secrets,
    createExecutionContext(),
  );

it("publishes the signing key's JWKS from its SIGNING_KEY secret", async () => {
  const res = await call("/.well-known/jwks.json");
  expect(res.status).toBe(200);
  const { keys } = (await res.json()) as { keys: { kid: string; alg: string }[] };
  expect(keys).toMatchObject([{ kid: JSON.parse(env.SIGNING_KEY).kid, alg: "ES256" }]);
});

it("serves the management API on D1: 401 without a token, 404 for unknown routes, 405 for a wrong method", async () => {
  const log = await call("/v2/projects/prj_x/audit-log");
  expect(log.status).toBe(401);
  expect(await log.json()).toMatchObject({ message: "missing Authorization header" });
  expect(log.headers.get("x-request-id")).toMatch(/^req_/);
  expect((await call("/v2/nope")).status).toBe(404);
  const put = await call("/v2/projects/prj_x/audit-log", { method: "PUT" });
  expect([put.status, put.headers.get("allow")]).toEqual([405, "GET, HEAD"]);
});

it("takes the first user with its BOOTSTRAP_TOKEN secret, and with no other token", async () => {
  vi.spyOn(console, "error").mockImplementationOnce(() => {});
  const res = await call("/v2/init", {
    method: "POST",
    headers: { authorization: `Bearer ${env.INTERNAL_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ name: "Ada", expiresAt: "2099-01-01T00:00:00Z" }),
  });
  // Without the secret read, this would be 403 "has no bootstrap token".
  expect(res.status).toBe(401);
  expect(await res.json()).toMatchObject({ message: /not this control plane's bootstrap token/ });
});

it("reads a run's own record through the RUN_API binding, not over the network", async () => {
  const owner = await d1Owner(env.DB, "Dee", "bound");
  const { projectId } = owner;
  const token = await owner.tokenSignedBy(JSON.parse(env.SIGNING_KEY) as StoredKey);
  const runId = newId("run");
  const indexed = await call(`/internal/runs/${runId}`, {
    method: "PUT",
    headers: { authorization: `Bearer ${env.INTERNAL_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({
      projectId,
      app: "hello",
      function: "run",
      async: true,
      status: "success",
      createdAt: Date.now(),
    }),
  });
  expect(indexed.status).toBe(204);
  const link = await call(`/v2/projects/${projectId}/dashboard-links`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}` },
  });
  const url = new URL(((await link.json()) as { url: string }).url);
  const signIn = await call(url.pathname + url.search, { redirect: "manual" });
  const cookie = signIn.headers
    .getSetCookie()
    .map((c) => c.split(";")[0])
    .join("; ");
  const page = await call(`/dashboard/runs/${runId}`, { headers: { cookie } });
  expect(page.status).toBe(200);
  expect(await page.text()).not.toContain("could not be read");
  expect(runApiAsked).toEqual([`GET /v4/${projectId}/hello/runs/${runId}`]);
});
