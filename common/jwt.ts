/**
 * JSON Web Tokens signed with ES256 (ECDSA P-256 + SHA-256) through WebCrypto only, so the same
 * code signs in the Node control plane and verifies inside the Worker. No other algorithm is
 * accepted: a token whose header names anything else (`none` included) is refused.
 */
import { JWT_ALG, JWT_ISSUER } from "./consts.ts";

export interface RunletClaims {
  iss: string;
  /** The principal: a user id (`usr_…`) or a service account id (`sa_…`). */
  sub: string;
  /** Token id, checked against revocations by the control plane. */
  jti: string;
  iat: number;
  exp: number;
  /** Set on service-account tokens: the one project the token belongs to. */
  prj?: string;
}

export type JwtFailure =
  | "malformed"
  | "algorithm"
  | "unknown-key"
  | "retired-key"
  | "signature"
  | "expired"
  | "claims";

export class JwtError extends Error {
  constructor(
    readonly reason: JwtFailure,
    message: string,
  ) {
    super(message);
    this.name = "JwtError";
  }
}

export interface Jwks {
  keys: (JsonWebKey & { kid?: string })[];
  /**
   * Runlet's own member (RFC 7517 §5: others ignore it): the keys an operator retired, no longer
   * in `keys`, so that a token signed by one is refused as such rather than as unknown.
   */
  retired?: { kid: string; retiredAt: string }[];
}

/** Public keys by `kid`, and when each retired key was retired (its `kid` to an ISO time). */
export type PublicKeys = ReadonlyMap<string, CryptoKey> & {
  readonly retired?: ReadonlyMap<string, string>;
};

const ALGORITHM = { name: "ECDSA", namedCurve: "P-256" } as const;
const SIGNATURE = { name: "ECDSA", hash: "SHA-256" } as const;
const encoder = new TextEncoder();

export function base64urlEncode(bytes: Uint8Array): string {
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

export function base64urlDecode(text: string): Uint8Array {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) throw new JwtError("malformed", "token is not base64url");
  const padded = text.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((text.length + 3) % 4);
  const binary = atob(padded);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

function decodeJson(part: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(new TextDecoder().decode(base64urlDecode(part)));
    if (value && typeof value === "object" && !Array.isArray(value)) {
      return value as Record<string, unknown>;
    }
  } catch {
    // fall through to the uniform error below
  }
  throw new JwtError("malformed", "token is not a JWT");
}

/** A new signing key pair; the private half never leaves the control plane. */
export async function generateSigningKey(): Promise<{
  privateJwk: JsonWebKey;
  publicJwk: JsonWebKey;
  kid: string;
}> {
  const pair = (await crypto.subtle.generateKey(ALGORITHM, true, [
    "sign",
    "verify",
  ])) as CryptoKeyPair;
  const privateJwk = (await crypto.subtle.exportKey("jwk", pair.privateKey)) as JsonWebKey;
  const publicJwk = (await crypto.subtle.exportKey("jwk", pair.publicKey)) as JsonWebKey;
  return { privateJwk, publicJwk, kid: await keyId(publicJwk) };
}

/** RFC 7638 thumbprint of a P-256 public key, used as its `kid`. */
export async function keyId(publicJwk: JsonWebKey): Promise<string> {
  const canonical = JSON.stringify({
    crv: publicJwk.crv,
    kty: publicJwk.kty,
    x: publicJwk.x,
    y: publicJwk.y,
  });
  const digest = await crypto.subtle.digest("SHA-256", encoder.encode(canonical));
  return base64urlEncode(new Uint8Array(digest)).slice(0, 16);
}

export function importPrivateKey(jwk: JsonWebKey): Promise<CryptoKey> {
  return crypto.subtle.importKey("jwk", jwk, ALGORITHM, false, ["sign"]);
}

export function importPublicKey(jwk: JsonWebKey): Promise<CryptoKey> {
  const { kty, crv, x, y } = jwk;
  return crypto.subtle.importKey("jwk", { kty, crv, x, y }, ALGORITHM, false, ["verify"]);
}

export async function signJwt(
  claims: RunletClaims,
  privateKey: CryptoKey,
  kid: string,
): Promise<string> {
  const header = base64urlEncode(encoder.encode(JSON.stringify({ alg: JWT_ALG, typ: "JWT", kid })));
  const payload = base64urlEncode(encoder.encode(JSON.stringify(claims)));
  const signature = await crypto.subtle.sign(
    SIGNATURE,
    privateKey,
    encoder.encode(`${header}.${payload}`),
  );
  return `${header}.${payload}.${base64urlEncode(new Uint8Array(signature))}`;
}

/**
 * A text field of a token's header (`part` 0) or claims (1), read without verifying it: for
 * choosing where to send the token or which key to fetch, never for a decision to trust it.
 * Undefined when the token names none, or is no JWT.
 */
function unverifiedField(token: string, part: 0 | 1, field: string): string | undefined {
  try {
    const value = decodeJson(token.split(".")[part] ?? "")[field];
    return typeof value === "string" ? value : undefined;
  } catch {
    return undefined;
  }
}

/** The project a token's claims name (`prj`, set on service accounts' tokens), unverified. */
export const tokenProject = (token: string): string | undefined =>
  unverifiedField(token, 1, "prj") || undefined;

/** Whose a token is (`sub`: a user's or a service account's id), unverified. */
export const tokenSubject = (token: string): string | undefined =>
  unverifiedField(token, 1, "sub") || undefined;

/** The `kid` a token's header names, unverified. */
export const tokenKid = (token: string): string | undefined => unverifiedField(token, 0, "kid");

/**
 * Verifies signature, algorithm, issuer and expiry. `keys` maps `kid` to a public key.
 * Throws `JwtError` with a reason a caller can turn into a 401 message.
 */
export async function verifyJwt(
  token: string,
  keys: PublicKeys,
  nowSeconds: number = Math.floor(Date.now() / 1000),
): Promise<RunletClaims> {
  const parts = token.split(".");
  if (parts.length !== 3) throw new JwtError("malformed", "token is not a JWT");
  const [headerPart, payloadPart, signaturePart] = parts as [string, string, string];
  const header = decodeJson(headerPart);
  if (header.alg !== JWT_ALG) throw new JwtError("algorithm", `token algorithm must be ${JWT_ALG}`);
  const key = typeof header.kid === "string" ? keys.get(header.kid) : undefined;
  if (!key) {
    const retiredAt = typeof header.kid === "string" ? keys.retired?.get(header.kid) : undefined;
    if (retiredAt)
      throw new JwtError(
        "retired-key",
        `token was signed by key ${header.kid}, which was retired at ${retiredAt}: ask for a new token`,
      );
    throw new JwtError("unknown-key", "token was signed by an unknown key");
  }
  const ok = await crypto.subtle.verify(
    SIGNATURE,
    key,
    base64urlDecode(signaturePart),
    encoder.encode(`${headerPart}.${payloadPart}`),
  );
  if (!ok) throw new JwtError("signature", "token signature is invalid");
  const claims = decodeJson(payloadPart);
  if (
    claims.iss !== JWT_ISSUER ||
    typeof claims.sub !== "string" ||
    typeof claims.jti !== "string" ||
    typeof claims.exp !== "number" ||
    typeof claims.iat !== "number" ||
    (claims.prj !== undefined && typeof claims.prj !== "string")
  ) {
    throw new JwtError("claims", "token claims are invalid");
  }
  if (claims.exp <= nowSeconds) throw new JwtError("expired", "token has expired");
  return claims as unknown as RunletClaims;
}

/** Imports every usable key of a JWKS document, keyed by `kid`, with its retired keys' ids. */
export async function importJwks(jwks: Jwks): Promise<PublicKeys> {
  const keys = new Map<string, CryptoKey>();
  for (const jwk of jwks.keys) {
    if (jwk.kty === "EC" && jwk.crv === "P-256" && jwk.kid)
      keys.set(jwk.kid, await importPublicKey(jwk));
  }
  const retired = new Map<string, string>();
  for (const r of Array.isArray(jwks.retired) ? jwks.retired : []) {
    if (typeof r?.kid === "string" && typeof r.retiredAt === "string" && !keys.has(r.kid))
      retired.set(r.kid, r.retiredAt);
  }
  return Object.assign(keys, { retired });
}
