import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
/** Where the Node control plane keeps its keys: `RUNLET_HOME/keys/`, files of mode 0600. */
import { generateSigningKey } from "../../common/jwt.ts";
import { type SigningKeys, type StoredKey, signingKeysFrom } from "./signing.ts";

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
  return signingKeysFrom(stored);
}

/** The 32 random bytes other keys are derived from (`home/keys/master.key`, mode 0600). */
export async function loadOrCreateMasterSecret(home: string): Promise<Uint8Array> {
  const dir = join(home, "keys");
  const file = join(dir, "master.key");
  try {
    const stored = Buffer.from((await readFile(file, "utf8")).trim(), "base64url");
    if (stored.byteLength >= 32) return new Uint8Array(stored);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
  const secret = crypto.getRandomValues(new Uint8Array(32));
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await writeFile(`${file}.tmp`, `${Buffer.from(secret).toString("base64url")}\n`, { mode: 0o600 });
  await rename(`${file}.tmp`, file);
  return secret;
}
