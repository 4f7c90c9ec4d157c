/** Bytes on WebCrypto and typed arrays only (Workers and Node alike): joining, hex, SHA-256. */

/** `chunks` one after another, in one buffer. */
export function concatBytes(chunks: readonly Uint8Array[]): Uint8Array<ArrayBuffer> {
  const all = new Uint8Array(chunks.reduce((n, c) => n + c.byteLength, 0));
  let at = 0;
  for (const chunk of chunks) {
    all.set(chunk, at);
    at += chunk.byteLength;
  }
  return all;
}

/** Lowercase hex. */
export function hex(bytes: ArrayBuffer | Uint8Array): string {
  let out = "";
  for (const byte of new Uint8Array(bytes)) out += byte.toString(16).padStart(2, "0");
  return out;
}

/** SHA-256 of `bytes`, lowercase hex. */
export async function sha256Hex(bytes: Uint8Array): Promise<string> {
  return hex(await crypto.subtle.digest("SHA-256", bytes));
}

/** Padded base64 (Workers and Node alike; in slices, as a 10 MiB body is passed). */
export function base64(bytes: Uint8Array): string {
  let binary = "";
  for (let at = 0; at < bytes.length; at += 0x8000)
    binary += String.fromCharCode(...bytes.subarray(at, at + 0x8000));
  return btoa(binary);
}

/**
 * An answer's body as it travels in JSON (a custom app's answer to a run with a webhook): its
 * text when it is UTF-8 (a byte order mark kept), else base64, saying so — a body that is not
 * text (an image, an archive) decoded as UTF-8 could not be had back.
 */
export function bodyOf(bytes: Uint8Array): { body: string; body_encoding?: "base64" } {
  try {
    return { body: new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes) };
  } catch {
    return { body: base64(bytes), body_encoding: "base64" };
  }
}

/**
 * The size of `value` as JSON, in UTF-8 bytes, when that is over `limit` (a result a webhook
 * delivery cannot carry); undefined within it. Most results are far within: those are not
 * encoded to be counted (UTF-8 takes at most 3 bytes per UTF-16 unit of the JSON).
 */
export function jsonBytesOver(value: unknown, limit: number): number | undefined {
  const json = JSON.stringify(value ?? null);
  if (json.length * 3 <= limit) return undefined;
  const bytes = new TextEncoder().encode(json).byteLength;
  return bytes > limit ? bytes : undefined;
}
