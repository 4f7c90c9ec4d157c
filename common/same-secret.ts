/** Comparing a presented secret (a token) with the expected one, on WebCrypto. */

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
