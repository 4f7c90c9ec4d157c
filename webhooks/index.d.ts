/**
 * `runlet/webhooks`: checks, on the receiving end, that a webhook delivery comes from Runlet.
 * See docs/webhooks.md. Structural types only, so that no particular `lib` (DOM, Node, Workers)
 * is needed: any Fetch API `Headers` or `Request` fits.
 */

/** A Fetch API `Headers` (or anything with the same `get`). */
export interface HeadersLike {
  get(name: string): string | null;
}

/** A `Headers`, or a plain object such as Node's `req.headers` (names in any case). */
export type WebhookHeaders = HeadersLike | Record<string, string | readonly string[] | undefined>;

/** The raw body, exactly as received: text (UTF-8 is signed) or its bytes. */
export type WebhookBody = string | Uint8Array | ArrayBuffer | ArrayBufferView;

/**
 * Why a delivery was refused:
 * - `missing-headers`: no `X-Request-Id`, timestamp or signature header;
 * - `malformed-signature`: the timestamp is not Unix seconds, or the signature header holds no
 *   `v1,<lowercase hex>` entry;
 * - `stale-timestamp`: the timestamp is more than `toleranceSeconds` from now, past or future;
 * - `bad-signature`: no entry is the HMAC of this request id, timestamp and body under the secret.
 */
export type WebhookFailureReason =
  | "missing-headers"
  | "malformed-signature"
  | "stale-timestamp"
  | "bad-signature";

export interface VerifyWebhookOptions {
  /** How far (seconds) the timestamp may be from `now`, either way. Default 300. */
  toleranceSeconds?: number;
  /** The current time, in milliseconds since the epoch. Default `Date.now()`. */
  now?: number;
  /** The brand in the header names, `X-{brand}-Webhook-...`. Default "Runlet". */
  brand?: string;
}

export interface VerifyWebhookParams extends VerifyWebhookOptions {
  /**
   * The `X-Webhook-Secret` sent with the run call; while the caller changes it, the new one and
   * the old one (a delivery signed with either is genuine).
   */
  secret: string | readonly string[];
  /** The raw body, exactly as received (not JSON parsed and serialized again). */
  body: WebhookBody;
  /** The delivery's headers. */
  headers: WebhookHeaders;
}

export type VerifyWebhookResult =
  | {
      ok: true;
      /** The run id, from `X-Request-Id`: the key to process each delivery once. */
      requestId: string;
      /** When the delivery was signed, in Unix seconds. */
      timestamp: number;
    }
  | { ok: false; reason: WebhookFailureReason };

export type VerifyWebhookRequestResult =
  | {
      ok: true;
      /** The run id, from `X-Request-Id`: the key to process each delivery once. */
      requestId: string;
      /** When the delivery was signed, in Unix seconds. */
      timestamp: number;
      /** The body that was verified, as text: `JSON.parse` it. */
      body: string;
    }
  | { ok: false; reason: WebhookFailureReason };

/** A Fetch API `Request` (or anything with the same `headers` and `arrayBuffer`). */
export interface RequestLike {
  readonly headers: HeadersLike;
  arrayBuffer(): Promise<ArrayBuffer>;
}

/**
 * Checks one webhook delivery: its headers, its timestamp against replays, and its signature
 * (HMAC-SHA256 keyed by `secret` over `{requestId}.{timestamp}.{body}`, compared in constant
 * time). With several secrets (the new and the old, while the caller's secret changes) or several
 * `v1,...` entries in the signature header, one match is enough. Throws a TypeError only on a bad
 * argument (an empty secret, a body of another type).
 */
export function verifyWebhook(params: VerifyWebhookParams): Promise<VerifyWebhookResult>;

/**
 * {@link verifyWebhook} for a Fetch API `Request`: reads its body once and, when the delivery
 * checks out, returns that body as text along with the result.
 */
export function verifyWebhookRequest(
  request: RequestLike,
  secret: string | readonly string[],
  options?: VerifyWebhookOptions,
): Promise<VerifyWebhookRequestResult>;
