/**
 * Caller authentication at the edge: the JWT is verified with WebCrypto against the control
 * plane's JWKS (cached per isolate), then the control plane says whether the token may use the
 * project and whether the app exists (cached 10 s, so a revocation bites within 10 s).
 */
import { importJwks, type Jwks, JwtError, type RunletClaims, verifyJwt } from "../common/jwt.ts";
import { controlPlaneFetch } from "./control-plane.ts";
import type { Caller, Env, ResolvedApp } from "./env.ts";
import { RunApiError } from "./errors.ts";

const JWKS_TTL_MS = 5 * 60_000;
const JWKS_RETRY_MS = 10_000;
const RESOLVE_TTL_MS = 10_000;
const RESOLVE_CACHE_MAX = 10_000;
/**
 * How long a run call waits for the control plane to say who may call what: a control plane
 * that hangs (stopped, its disk stalled) held every call as long as it did, not 502.
 */
const CONTROL_PLANE_PATIENCE_MS = 10_000;
const patience = (env: Env) => Number(env.CONTROL_PLANE_PATIENCE_MS) || CONTROL_PLANE_PATIENCE_MS;

let jwks: { keys: Map<string, CryptoKey>; fetchedAt: number } | undefined;
const resolved = new Map<string, { app: ResolvedApp; at: number }>();

async function publicKeys(env: Env, kidMissing: boolean): Promise<Map<string, CryptoKey>> {
  const age = jwks ? Date.now() - jwks.fetchedAt : Number.POSITIVE_INFINITY;
  if (jwks && age < JWKS_TTL_MS && !(kidMissing && age > JWKS_RETRY_MS)) return jwks.keys;
  let res: Response;
  try {
    res = await controlPlaneFetch(env, "/.well-known/jwks.json", {
      signal: AbortSignal.timeout(patience(env)),
    });
  } catch {
    if (jwks) return jwks.keys;
    throw new RunApiError(502, "cannot verify tokens: the control plane is not reachable");
  }
  if (!res.ok)
    throw new RunApiError(502, `cannot verify tokens: the control plane answered ${res.status}`);
  jwks = { keys: await importJwks((await res.json()) as Jwks), fetchedAt: Date.now() };
  return jwks.keys;
}

/**
 * Tokens whose signature this isolate has checked, with their claims: a caller sends the same
 * token call after call. Revocation is the control plane's answer (resolveApp, 10 s).
 */
const verified = new Map<string, RunletClaims>();
const VERIFIED_MAX = 10_000;

function remember(token: string, claims: RunletClaims): RunletClaims {
  if (verified.size >= VERIFIED_MAX) verified.clear();
  verified.set(token, claims);
  return claims;
}

/** Verifies `Authorization: Bearer <JWT>`; 401 `{message}` on anything wrong. */
export async function verifyCaller(env: Env, header: string | undefined): Promise<Caller> {
  if (!header) throw new RunApiError(401, "missing Authorization header");
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!match?.[1]) throw new RunApiError(401, "Authorization header must be 'Bearer <token>'");
  const token = match[1];
  const known = verified.get(token);
  if (known) {
    // The signature was checked once; expiry is checked on every call.
    if (known.exp > Date.now() / 1000) return { token, claims: known };
    verified.delete(token);
    throw new RunApiError(401, "token has expired");
  }
  try {
    return { token, claims: remember(token, await verifyJwt(token, await publicKeys(env, false))) };
  } catch (err) {
    if (!(err instanceof JwtError)) throw err;
    if (err.reason !== "unknown-key") throw new RunApiError(401, err.message);
  }
  try {
    // The control plane may have rotated its key since the JWKS was cached.
    return { token, claims: remember(token, await verifyJwt(token, await publicKeys(env, true))) };
  } catch (err) {
    if (err instanceof JwtError) throw new RunApiError(401, err.message);
    throw err;
  }
}

/** Asks the control plane whether this token may use `project` and what `app` is there. */
export async function resolveApp(
  env: Env,
  caller: Caller,
  project: string,
  app: string,
): Promise<ResolvedApp> {
  if (caller.claims.prj && caller.claims.prj !== project) {
    throw new RunApiError(
      403,
      `this token belongs to project '${caller.claims.prj}', not '${project}'`,
    );
  }
  const key = `${caller.claims.jti}\n${project}\n${app}`;
  const hit = resolved.get(key);
  if (hit && Date.now() - hit.at < (Number(env.AUTH_CACHE_MS) || RESOLVE_TTL_MS)) return hit.app;

  let res: Response;
  try {
    res = await controlPlaneFetch(
      env,
      `/v2/projects/${encodeURIComponent(project)}/apps/${encodeURIComponent(app)}`,
      {
        headers: { authorization: `Bearer ${caller.token}` },
        signal: AbortSignal.timeout(patience(env)),
      },
    );
  } catch {
    throw new RunApiError(502, "the control plane is not reachable");
  }
  if (res.ok) {
    const found = (await res.json()) as ResolvedApp;
    if (resolved.size >= RESOLVE_CACHE_MAX) resolved.clear();
    resolved.set(key, { app: found, at: Date.now() });
    return found;
  }
  const body = (await res.json().catch(() => ({}))) as { message?: string };
  const status = res.status === 401 || res.status === 403 || res.status === 404 ? res.status : 502;
  throw new RunApiError(status, body.message ?? `the control plane answered ${res.status}`);
}
