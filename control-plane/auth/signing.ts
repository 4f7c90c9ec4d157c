/**
 * The control plane's signing keys: the one it signs with, and the ones it signed with before
 * (docs/deploy.md, "Rotating the platform's secrets"). A previous key's public half stays in the
 * JWKS, so tokens signed with it keep working, until an operator retires it; a retired key's id
 * stays listed (`retired`) so that its tokens are refused as such.
 */
import { importPrivateKey, type Jwks } from "../../common/jwt.ts";

export interface SigningKeys {
  kid: string;
  privateKey: CryptoKey;
  /** The public halves, published at `/.well-known/jwks.json`. */
  jwks: Jwks;
  /** The keys signed with before this one, oldest first (public halves only). */
  previous: PreviousKey[];
}

/** Changes the signing keys where they are kept, one change at a time; gives the keys after it. */
export interface KeyStore {
  /** A new key signs from now on; the current one joins the previous keys (still verifying). */
  rotate(): Promise<SigningKeys>;
  /** A previous key stops verifying: tokens it signed are refused. */
  retire(kid: string): Promise<SigningKeys>;
}

/** A signing key pair as stored (JWKs), wherever it is stored. */
export interface StoredKey {
  kid: string;
  privateJwk: JsonWebKey;
  publicJwk: JsonWebKey;
}

/** A key signed with before: still verifies tokens until `retiredAt` is set. */
export interface PreviousKey {
  kid: string;
  publicJwk: JsonWebKey;
  /** When it stopped signing (ISO 8601). */
  replacedAt?: string;
  /** When it stopped verifying (ISO 8601): its tokens are refused from then on. */
  retiredAt?: string;
}

function publicOf(kid: string, jwk: JsonWebKey) {
  const { kty, crv, x, y } = jwk;
  return { kty, crv, x, y, kid, alg: "ES256", use: "sig" };
}

export async function signingKeysFrom(
  stored: StoredKey,
  previous: PreviousKey[] = [],
): Promise<SigningKeys> {
  // A key written as previous while still the current one (a rotation cut short) is current.
  const others = previous.filter((p) => p.kid !== stored.kid);
  return {
    kid: stored.kid,
    privateKey: await importPrivateKey(stored.privateJwk),
    jwks: {
      keys: [
        publicOf(stored.kid, stored.publicJwk),
        ...others.filter((p) => !p.retiredAt).map((p) => publicOf(p.kid, p.publicJwk)),
      ],
      retired: others.flatMap((p) => (p.retiredAt ? [{ kid: p.kid, retiredAt: p.retiredAt }] : [])),
    },
    previous: others,
  };
}

/**
 * Previous keys as written by an operator (`PREVIOUS_SIGNING_KEYS` on Workers) or by `runlet keys
 * rotate` (`keys/jwt-previous-keys.json`): a JSON array of `{kid, publicJwk, replacedAt?,
 * retiredAt?}`. A `privateJwk` beside them is dropped, never kept. Throws naming `source`.
 */
export function parsePreviousKeys(text: string | undefined, source: string): PreviousKey[] {
  if (!text?.trim()) return [];
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new Error(`${source} is not JSON`);
  }
  if (!Array.isArray(value))
    throw new Error(`${source} must be a JSON array of {kid, publicJwk, retiredAt?}`);
  return value.map((entry: Record<string, unknown>, i) => {
    const jwk = entry?.publicJwk as JsonWebKey | undefined;
    if (typeof entry?.kid !== "string" || jwk?.kty !== "EC" || jwk.crv !== "P-256")
      throw new Error(`${source}[${i}] must have a kid and a P-256 publicJwk`);
    for (const when of ["replacedAt", "retiredAt"] as const)
      if (entry[when] !== undefined && Number.isNaN(Date.parse(String(entry[when]))))
        throw new Error(`${source}[${i}].${when} must be a date (ISO 8601)`);
    return {
      kid: entry.kid,
      publicJwk: { kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y },
      ...(entry.replacedAt ? { replacedAt: String(entry.replacedAt) } : {}),
      ...(entry.retiredAt ? { retiredAt: String(entry.retiredAt) } : {}),
    };
  });
}

/**
 * When the key that signed a token made at `madeAt` (ms) was retired, if it was (its tokens are
 * refused since): the key signing then is the previous key replaced soonest after `madeAt`, else
 * the current one, never retired. Worked out from the times, as no token's `kid` is stored; a
 * previous key without `replacedAt` (one written by hand on Workers) leaves it unknown: null.
 */
export function keyRetiredAt(keys: SigningKeys, madeAt: number): string | null {
  let signer: PreviousKey | undefined;
  for (const key of keys.previous) {
    if (key.replacedAt === undefined) return null;
    const replaced = Date.parse(key.replacedAt);
    if (replaced > madeAt && (!signer || replaced < Date.parse(signer.replacedAt as string)))
      signer = key;
  }
  return signer?.retiredAt ?? null;
}
