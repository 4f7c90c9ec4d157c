/**
 * Header values as `fetch` can send them. `fetch` takes a header value as a ByteString (each
 * character one byte, none past U+00FF) and throws a TypeError for anything else — which a
 * client took for no answer, so `runlet run --webhook-secret 'sécret🎉'` said "cannot reach
 * the run API". A value with any character past ASCII goes as its UTF-8 bytes, which the Worker
 * reads back as the same text (a webhook secret signs as the receiver's own string, UTF-8).
 */

const encoder = new TextEncoder();

/** @param {string} value */
function utf8Bytes(value) {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: ASCII is the whole range.
  if (/^[\u0000-\u007f]*$/.test(value)) return value;
  let out = "";
  for (const byte of encoder.encode(value)) out += String.fromCharCode(byte);
  return out;
}

/**
 * @param {Record<string, string>} headers
 * @returns {Record<string, string>}
 */
export function asHeaderBytes(headers) {
  return Object.fromEntries(Object.entries(headers).map(([name, v]) => [name, utf8Bytes(v)]));
}
