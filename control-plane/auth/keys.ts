import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { generateSigningKey, importPrivateKey, type Jwks } from "../../common/jwt.ts";

export interface SigningKeys {
  kid: string;
  privateKey: CryptoKey;
  /** The public half, published at `/.well-known/jwks.json`. */
  jwks: Jwks;
}

interface StoredKey {
  kid: string;
  privateJwk: JsonWebKey;
  publicJwk: JsonWebKey;
}

/** Loads the control plane's ES256 signing key from `home/keys/`, creating it (mode 0600) once. */
export async function loadOrCreateSigningKey(home: string): Promise<SigningKeys> {
  const dir = join(home, "keys");
  const file = join(dir, "jwt-signing-key.json");
  let stored: StoredKey;
  try {
    stored = JSON.parse(await readFile(file, "utf8")) as StoredKey;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
    stored = await generateSigningKey();
    await mkdir(dir, { recursive: true, mode: 0o700 });
    await writeFile(`${file}.tmp`, JSON.stringify(stored), { mode: 0o600 });
    await rename(`${file}.tmp`, file);
  }
  const { kty, crv, x, y } = stored.publicJwk;
  return {
    kid: stored.kid,
    privateKey: await importPrivateKey(stored.privateJwk),
    jwks: { keys: [{ kty, crv, x, y, kid: stored.kid, alg: "ES256", use: "sig" }] },
  };
}
