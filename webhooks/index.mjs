/**
 * `runlet/webhooks`: checks, on the receiving end, that a webhook delivery comes from Runlet.
 *
 * A delivery carries `X-Request-Id` (the run id), `X-Runlet-Webhook-Timestamp` (Unix seconds)
 * and `X-Runlet-Webhook-Signature: v1,<sig>`, where sig is the lowercase hex HMAC-SHA256, keyed
 * by the caller's `X-Webhook-Secret`, of `{requestId}.{timestamp}.{body}` (body: the raw body
 * exactly as delivered). See docs/webhooks.md; the signing side is common/webhook-signature.ts.
 *
 * Plain ESM with no dependency and no build step: it runs as is in Node >= 18, Cloudflare
 * Workers, Deno, Bun and browsers, on WebCrypto and TextEncoder only.
 */

const REQUEST_ID_HEADER = "X-Request-Id";
const DEFAULT_BRAND = "Runlet";
const DEFAULT_TOLERANCE_SECONDS = 300;

const encoder = new TextEncoder();

/**
 * The same types as index.d.ts, for editors that read this file itself.
 *
 * @typedef {{ get(name: string): string | null }} HeadersLike A Fetch API `Headers`.
 * @typedef {HeadersLike | Record<string, string | readonly string[] | undefined>} WebhookHeaders
 *   A `Headers`, or a plain object such as Node's `req.headers` (names in any case).
 * @typedef {string | Uint8Array | ArrayBuffer | ArrayBufferView} WebhookBody The raw body.
 * @typedef {"missing-headers" | "malformed-signature" | "stale-timestamp" | "bad-signature"}
 *   WebhookFailureReason
 * @typedef {object} VerifyWebhookOptions
 * @property {number} [toleranceSeconds] How far (s) the timestamp may be from `now`, either way; 300.
 * @property {number} [now] The current time, in ms since the epoch; `Date.now()`.
 * @property {string} [brand] The brand in the header names (`X-{brand}-Webhook-...`); "Runlet".
 * @typedef {object} VerifyWebhookFields
 * @property {string | readonly string[]} secret The `X-Webhook-Secret` sent with the run call;
 *   while it is being changed, the new one and the old one (either matches).
 * @property {WebhookBody} body The raw body, exactly as received (not re-serialized JSON).
 * @property {WebhookHeaders} headers The delivery's headers.
 * @typedef {VerifyWebhookFields & VerifyWebhookOptions} VerifyWebhookParams
 * @typedef {{ ok: true, requestId: string, timestamp: number }
 *   | { ok: false, reason: WebhookFailureReason }} VerifyWebhookResult
 * @typedef {{ ok: true, requestId: string, timestamp: number, body: string }
 *   | { ok: false, reason: WebhookFailureReason }} VerifyWebhookRequestResult
 * @typedef {{ readonly headers: HeadersLike, arrayBuffer(): Promise<ArrayBuffer> }} RequestLike
 *   A Fetch API `Request`.
 */

/**
 * WebCrypto's `subtle`: the global one, or on Node 18 (where the global needs
 * `--experimental-global-webcrypto`) the same API from `node:crypto`. The specifier is not a
 * literal so that bundlers for other runtimes leave the import alone; it is only reached on Node.
 *
 * @returns {Promise<SubtleCrypto>}
 */
async function subtleCrypto() {
  const subtle = /** @type {{ crypto?: Crypto }} */ (globalThis).crypto?.subtle;
  if (subtle) return subtle;
  const specifier = "node:crypto";
  const { webcrypto } = await import(/* @vite-ignore */ specifier);
  return webcrypto.subtle;
}

/**
 * One header's value, looked up without regard to case; repeated values are joined with ", "
 * as the Fetch API does.
 *
 * @param {WebhookHeaders} headers
 * @param {string} name
 * @returns {string | undefined}
 */
function headerValue(headers, name) {
  if (headers === null || typeof headers !== "object") return undefined;
  if (typeof headers.get === "function") {
    const value = /** @type {HeadersLike} */ (headers).get(name);
    return value ?? undefined;
  }
  const wanted = name.toLowerCase();
  const plain = /** @type {Record<string, unknown>} */ (headers);
  for (const key of Object.keys(plain)) {
    if (key.toLowerCase() !== wanted) continue;
    const value = plain[key];
    if (typeof value === "string") return value;
    if (Array.isArray(value) && value.every((v) => typeof v === "string")) return value.join(", ");
    return undefined;
  }
  return undefined;
}

/**
 * The raw body's bytes. Bytes are signed as given (no decoding and re-encoding, so nothing such
 * as a byte order mark or an invalid sequence can change on the way); a string as UTF-8.
 *
 * @param {WebhookBody} body
 * @returns {Uint8Array}
 */
function bodyBytes(body) {
  if (typeof body === "string") return encoder.encode(body);
  if (body instanceof Uint8Array) return body;
  if (body instanceof ArrayBuffer) return new Uint8Array(body);
  if (ArrayBuffer.isView(body)) {
    return new Uint8Array(body.buffer, body.byteOffset, body.byteLength);
  }
  throw new TypeError("verifyWebhook: body must be a string, a Uint8Array or an ArrayBuffer");
}

/**
 * The well-formed `v1` entries of the signature header, as bytes. Entries are separated by
 * whitespace (Runlet sends one; a sender may add more); a comma that ends an entry is dropped,
 * as joining repeated headers adds one. Entries of another version or not lowercase hex of even
 * length are skipped.
 *
 * @param {string} header
 * @returns {Uint8Array[]}
 */
function signatureEntries(header) {
  /** @type {Uint8Array[]} */
  const entries = [];
  for (let token of header.trim().split(/\s+/)) {
    if (token.endsWith(",") && token.length > 1) token = token.slice(0, -1);
    const match = /^v1,((?:[0-9a-f]{2})+)$/.exec(token);
    if (!match?.[1]) continue;
    const hex = match[1];
    const bytes = new Uint8Array(hex.length / 2);
    for (let i = 0; i < bytes.length; i++) {
      bytes[i] = Number.parseInt(hex.slice(2 * i, 2 * i + 2), 16);
    }
    entries.push(bytes);
  }
  return entries;
}

/**
 * Whether `a` and `b` hold the same bytes, in time that depends only on their lengths: no early
 * exit on the first difference. Different lengths never match.
 *
 * @param {Uint8Array} a
 * @param {Uint8Array} b
 * @returns {boolean}
 */
function sameBytes(a, b) {
  let diff = a.length ^ b.length;
  for (let i = 0; i < a.length; i++) diff |= (a[i] ?? 0) ^ (b[i] ?? 0);
  return diff === 0;
}

/**
 * Checks one webhook delivery: its headers, its timestamp against replays, and its signature
 * (HMAC-SHA256 keyed by `secret` over `{requestId}.{timestamp}.{body}`, compared in constant
 * time). With several secrets (the new and the old, while the caller changes its
 * `X-Webhook-Secret`) or several signatures in the header, one match is enough.
 *
 * Verify before parsing the body, and key the processing on `requestId`: a delivery may arrive
 * more than once. Throws a TypeError only on a bad argument (an empty secret, a body of another
 * type); anything wrong with the delivery is a result with `ok: false`.
 *
 * @param {VerifyWebhookParams} params
 * @returns {Promise<VerifyWebhookResult>}
 * @example
 * const check = await verifyWebhook({ secret, body: rawBody, headers: req.headers });
 * if (!check.ok) return respond(401, check.reason);
 */
export async function verifyWebhook({
  secret,
  body,
  headers,
  toleranceSeconds = DEFAULT_TOLERANCE_SECONDS,
  now = Date.now(),
  brand = DEFAULT_BRAND,
}) {
  const secrets = typeof secret === "string" ? [secret] : secret;
  if (
    !Array.isArray(secrets) ||
    !secrets.length ||
    !secrets.every((s) => typeof s === "string" && s)
  ) {
    throw new TypeError("verifyWebhook: secret must be a non-empty string, or an array of them");
  }
  if (typeof toleranceSeconds !== "number" || !(toleranceSeconds >= 0)) {
    throw new TypeError("verifyWebhook: toleranceSeconds must be a number >= 0");
  }
  if (typeof now !== "number" || !Number.isFinite(now)) {
    throw new TypeError("verifyWebhook: now must be a time in milliseconds");
  }
  const bytes = bodyBytes(body);

  const requestId = headerValue(headers, REQUEST_ID_HEADER);
  const timestampHeader = headerValue(headers, `X-${brand}-Webhook-Timestamp`)?.trim();
  const signatureHeader = headerValue(headers, `X-${brand}-Webhook-Signature`);
  if (!requestId || !timestampHeader || !signatureHeader?.trim()) {
    return { ok: false, reason: "missing-headers" };
  }

  if (!/^[0-9]{1,15}$/.test(timestampHeader)) return { ok: false, reason: "malformed-signature" };
  const expected = signatureEntries(signatureHeader);
  if (expected.length === 0) return { ok: false, reason: "malformed-signature" };

  const timestamp = Number(timestampHeader);
  if (Math.abs(Math.floor(now / 1000) - timestamp) > toleranceSeconds) {
    return { ok: false, reason: "stale-timestamp" };
  }

  const subtle = await subtleCrypto();
  // Signed as sent: the timestamp header's own text, then the body's bytes untouched.
  const prefix = encoder.encode(`${requestId}.${timestampHeader}.`);
  const message = new Uint8Array(prefix.length + bytes.length);
  message.set(prefix, 0);
  message.set(bytes, prefix.length);

  // Every secret and every entry is compared, whatever the earlier ones gave.
  let matched = false;
  for (const key of secrets) {
    const hmacKey = await subtle.importKey(
      "raw",
      encoder.encode(key),
      { name: "HMAC", hash: "SHA-256" },
      false,
      ["sign"],
    );
    const mac = new Uint8Array(await subtle.sign("HMAC", hmacKey, message));
    for (const candidate of expected) matched = sameBytes(mac, candidate) || matched;
  }
  if (!matched) return { ok: false, reason: "bad-signature" };
  return { ok: true, requestId, timestamp };
}

/**
 * {@link verifyWebhook} for a Fetch API `Request` (Cloudflare Workers, Deno, Bun, Hono, Node's
 * `fetch` handlers): reads its body once and, when the delivery checks out, returns that body as
 * text along with the result, ready for `JSON.parse`.
 *
 * @param {RequestLike} request
 * @param {string | readonly string[]} secret the `X-Webhook-Secret` sent with the run call (or,
 *   while it changes, the new one and the old one)
 * @param {VerifyWebhookOptions} [options]
 * @returns {Promise<VerifyWebhookRequestResult>}
 * @example
 * const check = await verifyWebhookRequest(request, env.WEBHOOK_SECRET);
 * if (!check.ok) return new Response(check.reason, { status: 401 });
 * const delivery = JSON.parse(check.body);
 */
export async function verifyWebhookRequest(request, secret, options = {}) {
  const raw = new Uint8Array(await request.arrayBuffer());
  const result = await verifyWebhook({ ...options, secret, body: raw, headers: request.headers });
  if (!result.ok) return result;
  // ignoreBOM keeps the text exactly what was signed.
  const body = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true }).decode(raw);
  return { ...result, body };
}
