// The control plane's Workers entry over D1: keys from its secrets, answers as under Node.
import { applyD1Migrations, createExecutionContext, env } from "cloudflare:test";
import { beforeAll, expect, it, vi } from "vitest";
import worker from "./worker.ts";

beforeAll(() => applyD1Migrations(env.DB, env.TEST_MIGRATIONS));

// Its secrets as `wrangler secret put` sets them, the bootstrap token included.
const secrets = { ...env, BOOTSTRAP_TOKEN: "bootstrap-token-of-the-worker-0123456789" };

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

it("serves the management API on D1: 401 without a token, 404 for unknown routes", async () => {
  const log = await call("/v2/projects/prj_x/audit-log");
  expect(log.status).toBe(401);
  expect(await log.json()).toMatchObject({ message: "missing Authorization header" });
  expect(log.headers.get("x-request-id")).toMatch(/^req_/);
  expect((await call("/v2/nope")).status).toBe(404);
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
