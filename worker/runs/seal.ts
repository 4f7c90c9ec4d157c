/**
 * A finished delivery's target and body, kept sealed for the run's retention so that it can be
 * sent again (POST …/runs/{run_id}/deliveries): AES-256-GCM under a key derived (HKDF) from the
 * Worker's INTERNAL_TOKEN, bound to its run id. The secret that signed it is never kept. Should
 * the token change, what was sealed under the old one can no longer be opened: such a run
 * cannot be redelivered (409), nothing else is affected.
 */
import type { Env } from "../env.ts";

/** What a delivery needs to be sent again. */
export interface Sealed {
  url: string;
  body: string;
}

const IV_BYTES = 12;
let cached: { token: string; key: Promise<CryptoKey> } | undefined;

function keyOf(env: Env): Promise<CryptoKey> {
  if (cached?.token !== env.INTERNAL_TOKEN) {
    const key = crypto.subtle
      .importKey("raw", new TextEncoder().encode(env.INTERNAL_TOKEN), "HKDF", false, ["deriveKey"])
      .then((material) =>
        crypto.subtle.deriveKey(
          {
            name: "HKDF",
            hash: "SHA-256",
            salt: new Uint8Array(0),
            info: new TextEncoder().encode("runlet: sealed webhook deliveries"),
          },
          material,
          { name: "AES-GCM", length: 256 },
          false,
          ["encrypt", "decrypt"],
        ),
      );
    cached = { token: env.INTERNAL_TOKEN, key };
  }
  return cached.key;
}

export async function seal(env: Env, runId: string, delivery: Sealed): Promise<ArrayBuffer> {
  const iv = crypto.getRandomValues(new Uint8Array(IV_BYTES));
  // The URL (never a newline in it: it is a parsed URL's href), a newline, the body as it is.
  const plain = new TextEncoder().encode(`${delivery.url}\n${delivery.body}`);
  const additionalData = new TextEncoder().encode(runId);
  const cipher = await crypto.subtle.encrypt(
    { name: "AES-GCM", iv, additionalData },
    await keyOf(env),
    plain,
  );
  const out = new Uint8Array(IV_BYTES + cipher.byteLength);
  out.set(iv);
  out.set(new Uint8Array(cipher), IV_BYTES);
  return out.buffer;
}

/** The sealed delivery of `runId`, or undefined when it cannot be opened (another key). */
export async function unseal(
  env: Env,
  runId: string,
  sealed: ArrayBuffer,
): Promise<Sealed | undefined> {
  const bytes = new Uint8Array(sealed);
  try {
    const plain = await crypto.subtle.decrypt(
      {
        name: "AES-GCM",
        iv: bytes.slice(0, IV_BYTES),
        additionalData: new TextEncoder().encode(runId),
      },
      await keyOf(env),
      bytes.slice(IV_BYTES),
    );
    const text = new TextDecoder().decode(plain);
    const cut = text.indexOf("\n");
    return { url: text.slice(0, cut), body: text.slice(cut + 1) };
  } catch {
    return undefined;
  }
}
