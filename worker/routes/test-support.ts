// What the route tests share: the Worker's upstreams (control plane and runtime host) played by
// fetchMock, a signing key for callers' tokens, and small request helpers. The end-to-end tests
// in test/ run the real upstreams.
import { env, fetchMock, SELF } from "cloudflare:test";
import { expect } from "vitest";
import { JWT_ISSUER } from "../../common/consts.ts";
import {
  generateSigningKey,
  importPrivateKey,
  type RunletClaims,
  signJwt,
} from "../../common/jwt.ts";

export const CONTROL = "http://control.test";
export const HOST = "http://host.test";
export const PROJECT = "prj_test";

let signer: ((claims?: Partial<RunletClaims>) => Promise<string>) | undefined;

/** A caller's token, signed with the key the fake control plane publishes. */
export function sign(claims: Partial<RunletClaims> = {}): Promise<string> {
  if (!signer) throw new Error("setUpUpstreams() first");
  return signer(claims);
}

/** What the worker reported to the control plane's runs index, by run id. */
const runReports = new Map<string, Record<string, unknown>>();

/** For beforeAll: the fake control plane's JWKS and runs index (the host is per test). */
export async function setUpUpstreams(): Promise<void> {
  const key = await generateSigningKey();
  const privateKey = await importPrivateKey(key.privateJwk);
  signer = (claims = {}) =>
    signJwt(
      {
        iss: JWT_ISSUER,
        sub: "usr_1",
        jti: `tok_${crypto.randomUUID()}`,
        iat: Math.floor(Date.now() / 1000),
        exp: Math.floor(Date.now() / 1000) + 3600,
        ...claims,
      },
      privateKey,
      key.kid,
    );
  fetchMock.activate();
  fetchMock.disableNetConnect();
  fetchMock
    .get(CONTROL)
    .intercept({ path: "/.well-known/jwks.json" })
    .reply(200, { keys: [{ ...key.publicJwk, kid: key.kid }] })
    .persist();
  // The host answers its health check: asked before the first call there (worker/host-reach.ts).
  fetchMock.get(HOST).intercept({ path: "/healthz" }).reply(200, "ok").persist();
  fetchMock
    .get(CONTROL)
    .intercept({ path: /^\/internal\/runs\/run_/, method: "PUT" })
    .reply(({ path, body, headers }) => {
      const auth = new Headers(headers as HeadersInit).get("authorization");
      if (auth !== `Bearer ${env.INTERNAL_TOKEN}`) return { statusCode: 401, data: "{}" };
      runReports.set(path.split("/").at(-1) ?? "", JSON.parse(String(body)));
      return { statusCode: 200, data: "{}" };
    })
    .persist();
}

/** For afterEach: every one-shot upstream answer a test set up was used (the JWKS persists). */
export function expectUpstreamsUsed(): void {
  expect(fetchMock.pendingInterceptors().filter((i) => !i.persist)).toEqual([]);
}

/** Whether the worker reported `runId` to the runs index (so far). */
export const reported = (runId: string) => runReports.has(runId);

/** The runs-index report of a run, once the worker's waitUntil has sent it (bounded wait). */
export async function reportOf(runId: string) {
  for (let i = 0; i < 100 && !runReports.has(runId); i++)
    await new Promise((r) => setTimeout(r, 10));
  return runReports.get(runId);
}

/** The control plane's answer for `app` (what resolveApp reads). */
export function appIsDeployed(
  app = "hello",
  runtime: "managed" | "custom" = "managed",
  id = "app_1",
  /** The functions its start check found (absent: not known, as for an older control plane). */
  functions?: string[],
) {
  fetchMock
    .get(CONTROL)
    .intercept({ path: `/v2/projects/${PROJECT}/apps/${app}` })
    .reply(200, {
      id,
      name: app,
      runtime,
      version: 1,
      scaling: { minReplicas: 0, maxReplicas: 2, replicaConcurrency: 4, capacity: 8 },
      responseGracePeriod: 900,
      queueTimeout: 600,
      ...(functions ? { functions } : {}),
      createdAt: "2026-01-01T00:00:00.000Z",
      updatedAt: "2026-01-01T00:00:00.000Z",
    });
}

export function hostAnswers(status: number, body: unknown, fn = "run", delayMs = 0) {
  const answer = fetchMock
    .get(HOST)
    .intercept({ path: `/internal/invoke/${PROJECT}/hello/${fn}`, method: "POST" })
    .reply(status, body as object);
  if (delayMs) answer.delay(delayMs);
}

export async function call(path: string, init: RequestInit = {}) {
  const res = await SELF.fetch(`https://api.test${path}`, { method: "POST", body: "{}", ...init });
  return { res, body: (await res.json()) as Record<string, unknown> };
}
