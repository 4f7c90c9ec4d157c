/** Secrets on WebCrypto: comparing a presented one with the expected one, making and hashing one. */
import { base64urlEncode } from "./jwt.ts";

const encoder = new TextEncoder();

/**
 * Equal in constant time: both sides are hashed first, so neither length nor content leaks.
 * An empty `given` never matches.
 */
export async function sameSecret(given: string, expected: string): Promise<boolean> {
  const [a, b] = await Promise.all(
    [given, expected].map(
      async (s) => new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(s))),
    ),
  );
  let diff = 0;
  for (let i = 0; i < 32; i++) diff |= (a?.[i] ?? 0) ^ (b?.[i] ?? 0);
  return diff === 0 && given.length > 0;
}

/** A new random secret: 32 bytes, base64url (43 characters), behind `prefix`. */
export function newSecret(prefix = ""): string {
  return prefix + base64urlEncode(crypto.getRandomValues(new Uint8Array(32)));
}

/** What is stored of a secret: its SHA-256, base64url. */
export async function secretHash(secret: string): Promise<string> {
  return base64urlEncode(
    new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(secret))),
  );
}
