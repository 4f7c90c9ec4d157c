/** Where the Node control plane keeps its keys: `RUNLET_HOME/keys/`, files of mode 0600. */
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { generateSigningKey } from "../../common/jwt.ts";
import { writePrivateFile } from "../home.ts";
import {
  type KeyStore,
  type PreviousKey,
  parsePreviousKeys,
  type SigningKeys,
  type StoredKey,
  signingKeysFrom,
} from "./signing.ts";

const keyFiles = (home: string) => {
  const dir = join(home, "keys");
  return {
    dir,
    signing: join(dir, "jwt-signing-key.json"),
    previous: join(dir, "jwt-previous-keys.json"),
  };
};

async function readPrevious(file: string): Promise<PreviousKey[]> {
  try {
    return parsePreviousKeys(await readFile(file, "utf8"), file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw err;
  }
}

/**
 * Loads the control plane's ES256 signing key from `home/keys/`, creating it (mode 0600) once,
 * with the keys it signed with before (`jwt-previous-keys.json`, written by a rotation).
 */
export async function loadOrCreateSigningKey(home: string): Promise<SigningKeys> {
  const files = keyFiles(home);
  let stored: StoredKey;
  try {
    stored = JSON.parse(await readFile(files.signing, "utf8")) as StoredKey;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
    stored = await generateSigningKey();
    await mkdir(files.dir, { recursive: true, mode: 0o700 });
    await writeFile(`${files.signing}.tmp`, JSON.stringify(stored), { mode: 0o600 });
    await rename(`${files.signing}.tmp`, files.signing);
  }
  return signingKeysFrom(stored, await readPrevious(files.previous));
}

/**
 * The Node control plane's keys in `home/keys/`. A rotation writes the previous keys first and
 * the new signing key second (each by rename): cut short between the two, the old key is still
 * the signing key and its entry among the previous ones is ignored.
 */
export function fileKeyStore(home: string): KeyStore {
  const files = keyFiles(home);
  let chain: Promise<unknown> = Promise.resolve();
  const serial = <T>(change: () => Promise<T>): Promise<T> => {
    const done = chain.then(change);
    chain = done.catch(() => {});
    return done;
  };
  const read = async () => ({
    current: JSON.parse(await readFile(files.signing, "utf8")) as StoredKey,
    previous: await readPrevious(files.previous),
  });
  const writePrevious = (previous: PreviousKey[]) =>
    writePrivateFile(files.previous, `${JSON.stringify(previous, null, 2)}\n`);
  return {
    rotate: () =>
      serial(async () => {
        const { current, previous } = await read();
        const next = await generateSigningKey();
        const kept = [
          ...previous.filter((p) => p.kid !== current.kid),
          { kid: current.kid, publicJwk: current.publicJwk, replacedAt: new Date().toISOString() },
        ];
        await writePrevious(kept);
        await writePrivateFile(files.signing, JSON.stringify(next));
        return signingKeysFrom(next, kept);
      }),
    retire: (kid) =>
      serial(async () => {
        const { current, previous } = await read();
        const retiredAt = new Date().toISOString();
        const kept = previous.map((p) => (p.kid === kid && !p.retiredAt ? { ...p, retiredAt } : p));
        await writePrevious(kept);
        return signingKeysFrom(current, kept);
      }),
  };
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
