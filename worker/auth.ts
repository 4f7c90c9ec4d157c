/**
 * Caller authentication at the edge: the JWT is verified with WebCrypto against the control
 * plane's JWKS (cached per isolate; every key in it verifies, a rotation's previous ones too),
 * then the control plane says whether the token may use the project and whether the app exists
 * (cached 10 s, so a revocation, or a key's retirement, bites within 10 s).
 */
import {
  importJwks,
  type Jwks,
  JwtError,
  type PublicKeys,
  type RunletClaims,
  tokenKid,
  verifyJwt,
} from "../common/jwt.ts";
import {
  CANNOT_VERIFY,
  CONTROL_PLANE_UNREACHABLE,
  controlPlaneAnswered,
} from "../common/protocol/no-run.ts";
import { controlPlaneFetch, controlPlaneFetchPatiently } from "./control-plane.ts";
import type { Caller, Env, ResolvedApp } from "./env.ts";
import { RunApiError } from "./errors.ts";

const JWKS_TTL_MS = 5 * 60_000;
/** A `kid` still missing after a fetch is not fetched for again for this long. */
const KID_RETRY_MS = 10_000;
/** Fetches for `kid`s not in the cache, at most this many per KID_RETRY_MS: made-up ids do not
 * each cost the control plane a fetch of its JWKS. */
const KID_FETCHES = 5;
const KIDS_MISSING_MAX = 1_000;
const RESOLVE_TTL_MS = 10_000;
const RESOLVE_CACHE_MAX = 10_000;
/**
 * How long a run call waits for the control plane to say who may call what: a control plane
 * that hangs (stopped, its disk stalled) held every call as long as it did, not 502.
 */
const CONTROL_PLANE_PATIENCE_MS = 10_000;
const patience = (env: Env) => Number(env.CONTROL_PLANE_PATIENCE_MS) || CONTROL_PLANE_PATIENCE_MS;

let jwks: { keys: PublicKeys; fetchedAt: number } | undefined;
let fetching: Promise<PublicKeys> | undefined;
/** `kid`s a fetch did not find, and when; the times of the fetches made for a missing `kid`. */
const missing = new Map<string, number>();
let kidFetches: number[] = [];
const resolved = new Map<string, { app: ResolvedApp; at: number }>();

async function fetchJwks(env: Env): Promise<PublicKeys> {
  let res: Response;
  try {
    // Keys known already are used while the control plane is away; none known, it is waited for.
    res = jwks
      ? await controlPlaneFetch(env, "/.well-known/jwks.json", {
          signal: AbortSignal.timeout(patience(env)),
        })
      : await controlPlaneFetchPatiently(env, "/.well-known/jwks.json", {}, patience(env));
  } catch {
    if (jwks) return jwks.keys;
    throw new RunApiError(502, CANNOT_VERIFY + CONTROL_PLANE_UNREACHABLE);
  }
  if (!res.ok) throw new RunApiError(502, CANNOT_VERIFY + controlPlaneAnswered(res.status));
  const keys = await importJwks((await res.json()) as Jwks);
  jwks = { keys, fetchedAt: Date.now() };
  return keys;
}

/**
 * The control plane's public keys, cached 5 minutes. Given the `kid` of a token they do not
 * know, fetched again at once (the control plane rotated its key: docs/deploy.md), unless that
 * `kid` was missing from a fetch in the last 10 s or 5 such fetches were made in that time.
 */
async function publicKeys(env: Env, kid?: string): Promise<PublicKeys> {
  const now = Date.now();
  if (jwks && kid === undefined && now - jwks.fetchedAt < JWKS_TTL_MS) return jwks.keys;
  if (jwks && kid !== undefined) {
    if (jwks.keys.has(kid)) return jwks.keys;
    kidFetches = kidFetches.filter((at) => now - at < KID_RETRY_MS);
    const missedAt = missing.get(kid);
    if (missedAt !== undefined && now - missedAt < KID_RETRY_MS) return jwks.keys;
    if (kidFetches.length >= KID_FETCHES) return jwks.keys;
    kidFetches.push(now);
  }
  fetching ??= fetchJwks(env).finally(() => {
    fetching = undefined;
  });
  const keys = await fetching;
  if (kid !== undefined && !keys.has(kid)) {
    if (missing.size >= KIDS_MISSING_MAX) missing.clear();
    missing.set(kid, Date.now());
  }
  return keys;
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
    return { token, claims: remember(token, await verifyJwt(token, await publicKeys(env))) };
  } catch (err) {
    if (!(err instanceof JwtError)) throw err;
    if (err.reason !== "unknown-key") throw new RunApiError(401, err.message);
  }
  try {
    // The control plane may have rotated its key since the JWKS was cached.
    const keys = await publicKeys(env, tokenKid(token) ?? "");
    return { token, claims: remember(token, await verifyJwt(token, keys)) };
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
  /** Ask even when a recent answer is kept (it may predate a deploy). */
  fresh = false,
): Promise<ResolvedApp> {
  if (caller.claims.prj && caller.claims.prj !== project) {
    throw new RunApiError(
      403,
      `this token belongs to project '${caller.claims.prj}', not '${project}'`,
    );
  }
  const key = `${caller.claims.jti}\n${project}\n${app}`;
  const hit = resolved.get(key);
  if (!fresh && hit && Date.now() - hit.at < (Number(env.AUTH_CACHE_MS) || RESOLVE_TTL_MS))
    return hit.app;

  let res: Response;
  try {
    res = await controlPlaneFetchPatiently(
      env,
      `/v2/projects/${encodeURIComponent(project)}/apps/${encodeURIComponent(app)}`,
      { headers: { authorization: `Bearer ${caller.token}` } },
      patience(env),
    );
  } catch {
    throw new RunApiError(502, CONTROL_PLANE_UNREACHABLE);
  }
  if (res.ok) {
    const found = (await res.json()) as ResolvedApp;
    if (resolved.size >= RESOLVE_CACHE_MAX) resolved.clear();
    resolved.set(key, { app: found, at: Date.now() });
    return found;
  }
  const body = (await res.json().catch(() => ({}))) as { message?: string };
  const status = res.status === 401 || res.status === 403 || res.status === 404 ? res.status : 502;
  throw new RunApiError(status, body.message ?? controlPlaneAnswered(res.status));
}
