// The control plane's Workers entry after a rotation (docs/deploy.md, "Rotating the platform's
// secrets"): its PREVIOUS_SIGNING_KEYS secret read inside workerd, as `wrangler secret put` sets
// it. A file of its own: the entry keeps the app it built from the first request's secrets, and
// the other files' SIGNING_KEY alone must stay alone in their JWKS.
import { applyD1Migrations, createExecutionContext, env } from "cloudflare:test";
import { beforeAll, expect, it } from "vitest";
import { generateSigningKey } from "../common/jwt.ts";
import { d1Owner } from "./testing/d1-owner.ts";
import { strictD1 } from "./testing/strict-d1.ts";
import worker from "./worker.ts";

beforeAll(() => applyD1Migrations(env.DB, env.TEST_MIGRATIONS));

const previous = await generateSigningKey();
const retired = await generateSigningKey();
const retiredAt = "2026-11-20T10:00:00.000Z";
// As the commands of docs/deploy.md write it: the previous key's public half with replacedAt,
// and a key retired after it by adding retiredAt to its entry.
const PREVIOUS_SIGNING_KEYS = JSON.stringify([
  { kid: retired.kid, publicJwk: retired.publicJwk, replacedAt: "2026-11-01T00:00:00Z", retiredAt },
  { kid: previous.kid, publicJwk: previous.publicJwk, replacedAt: "2026-11-20T09:00:00Z" },
]);

const call = (path: string, secrets: Partial<typeof env>, init?: RequestInit) =>
  worker.fetch(
    new Request(`https://control.example${path}`, init),
    { ...env, DB: strictD1(env.DB), ...secrets },
    createExecutionContext(),
  );

it("fails every request, naming the secret, while PREVIOUS_SIGNING_KEYS is not such a list", async () => {
  const bad = { PREVIOUS_SIGNING_KEYS: '[{"kid":"a"}]' };
  for (let i = 0; i < 2; i++) {
    await expect(call("/.well-known/jwks.json", bad)).rejects.toThrow(
      "PREVIOUS_SIGNING_KEYS[0] must have a kid and a P-256 publicJwk",
    );
  }
});

it("serves the previous key beside SIGNING_KEY, verifies its tokens, and refuses a retired key's", async () => {
  const jwks = await call("/.well-known/jwks.json", { PREVIOUS_SIGNING_KEYS });
  expect(jwks.status).toBe(200);
  const doc = (await jwks.json()) as { keys: { kid: string }[]; retired?: { kid: string }[] };
  expect(doc.keys.map((k) => k.kid)).toEqual([JSON.parse(env.SIGNING_KEY).kid, previous.kid]);
  expect(doc.retired).toEqual([{ kid: retired.kid, retiredAt }]);

  const { projectId, tokenSignedBy: tokenOf } = await d1Owner(env.DB, "Rae", "rotated");
  const read = async (token: string) => {
    const res = await call(
      `/v2/projects/${projectId}/secrets`,
      { PREVIOUS_SIGNING_KEYS },
      {
        headers: { authorization: `Bearer ${token}` },
      },
    );
    return { status: res.status, body: (await res.json()) as { message?: string } };
  };

  // Signed before the rotation: still good.
  expect(await read(await tokenOf(previous))).toEqual({
    status: 200,
    body: { secrets: [], hasMore: false },
  });
  // Signed by the key retired since: refused, saying so, not as an unknown key.
  expect(await read(await tokenOf(retired))).toEqual({
    status: 401,
    body: expect.objectContaining({
      message: `token was signed by key ${retired.kid}, which was retired at ${retiredAt}: ask for a new token`,
    }),
  });
});
