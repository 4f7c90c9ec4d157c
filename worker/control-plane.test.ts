// The control plane through the service binding `CONTROL_PLANE` (worker/control-plane.ts): when
// both run on Workers, a fetch to CONTROL_PLANE_URL would not reach it (error 1042 on a
// workers.dev of the same account), so with the binding nothing goes over the network.
import { createExecutionContext, env, fetchMock, waitOnExecutionContext } from "cloudflare:test";
import { beforeAll, expect, it } from "vitest";
import { JWT_ISSUER } from "../common/consts.ts";
import { generateSigningKey, importPrivateKey, signJwt } from "../common/jwt.ts";
import type { Env } from "./env.ts";
import { app } from "./index.ts";
import { CONTROL, HOST, PROJECT } from "./routes/test-support.ts";

beforeAll(() => {
  fetchMock.activate();
  // Nothing answers at CONTROL_PLANE_URL: a request sent there fails the call.
  fetchMock.disableNetConnect();
  // The run's shard reports it to the runs index later, with the bindings wrangler.toml gives
  // it (a test cannot hand it this one): that report is taken at the URL.
  fetchMock
    .get(CONTROL)
    .intercept({ path: "/internal/runs", method: "POST" })
    .reply(200, { recorded: 1, skipped: 0 })
    .persist();
});

it("sends every request for the control plane to its binding, none to CONTROL_PLANE_URL", async () => {
  const key = await generateSigningKey();
  const now = Math.floor(Date.now() / 1000);
  const token = await signJwt(
    { iss: JWT_ISSUER, sub: "usr_1", jti: "tok_binding", iat: now, exp: now + 600 },
    await importPrivateKey(key.privateJwk),
    key.kid,
  );
  const seen: string[] = [];
  const controlPlane = {
    async fetch(input: RequestInfo | URL, init?: RequestInit) {
      const req = new Request(input, init);
      const { pathname } = new URL(req.url);
      seen.push(`${req.method} ${pathname}`);
      if (pathname === "/.well-known/jwks.json")
        return Response.json({ keys: [{ ...key.publicJwk, kid: key.kid }] });
      if (pathname === `/v2/projects/${PROJECT}/apps/bound`)
        return Response.json({
          id: "app_bound",
          name: "bound",
          runtime: "managed",
          version: 1,
          scaling: { minReplicas: 0, maxReplicas: 1, replicaConcurrency: 1, capacity: 1 },
          responseGracePeriod: 900,
          queueTimeout: 600,
        });
      if (pathname === "/internal/hosts") return Response.json({ hosts: [] });
      return Response.json({ message: "unexpected" }, { status: 500 });
    },
  } as unknown as Fetcher;
  // The Worker asks a host it has not reached yet whether it answers (worker/host-reach.ts).
  fetchMock.get(HOST).intercept({ path: "/healthz" }).reply(200, "ok").persist();
  fetchMock
    .get(HOST)
    .intercept({ path: `/internal/invoke/${PROJECT}/bound/run`, method: "POST" })
    .reply(200, { ok: true, result: "via the binding", run_time_ms: 1 });

  const ctx = createExecutionContext();
  const res = await app.fetch(
    new Request(`https://api.test/v4/${PROJECT}/bound/run`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}` },
      body: "{}",
    }),
    { ...(env as unknown as Env), CONTROL_PLANE: controlPlane },
    ctx,
  );
  expect(res.status).toBe(200);
  expect(await res.json()).toMatchObject({ result: "via the binding" });
  await waitOnExecutionContext(ctx);
  expect(seen).toEqual(
    expect.arrayContaining([
      "GET /.well-known/jwks.json",
      `GET /v2/projects/${PROJECT}/apps/bound`,
      "GET /internal/hosts",
    ]),
  );
});
