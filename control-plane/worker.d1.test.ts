// The control plane's Workers entry over D1: keys from its secrets, answers as under Node.
import { applyD1Migrations, createExecutionContext, env } from "cloudflare:test";
import { beforeAll, expect, it } from "vitest";
import worker from "./worker.ts";

beforeAll(() => applyD1Migrations(env.DB, env.TEST_MIGRATIONS));

const call = (path: string) =>
  worker.fetch(new Request(`https://control.example${path}`), env, createExecutionContext());

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
