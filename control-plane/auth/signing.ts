import { importPrivateKey, type Jwks } from "../../common/jwt.ts";

export interface SigningKeys {
  kid: string;
  privateKey: CryptoKey;
  /** The public half, published at `/.well-known/jwks.json`. */
  jwks: Jwks;
}

/** A signing key pair as stored (JWKs), wherever it is stored. */
export interface StoredKey {
  kid: string;
  privateJwk: JsonWebKey;
  publicJwk: JsonWebKey;
}

export async function signingKeysFrom(stored: StoredKey): Promise<SigningKeys> {
  const { kty, crv, x, y } = stored.publicJwk;
  return {
    kid: stored.kid,
    privateKey: await importPrivateKey(stored.privateJwk),
    jwks: { keys: [{ kty, crv, x, y, kid: stored.kid, alg: "ES256", use: "sig" }] },
  };
}
