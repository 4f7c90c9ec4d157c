/**
 * The webhook signature (docs/webhooks.md), on WebCrypto (Workers and Node alike): HMAC-SHA256 keyed
 * by the caller's `X-Webhook-Secret` over `{request id}.{timestamp}.{body}`, lowercase hex,
 * sent as `v1,<hex>`. The receiver-side check is `webhooks/index.mjs` (`runlet/webhooks`).
 */

import { hex } from "./bytes.ts";

export const SIGNATURE_VERSION = "v1";

const encoder = new TextEncoder();

/** The signature header's value for one delivery: `v1,<lowercase hex HMAC-SHA256>`. */
export async function signDelivery(
  secret: string,
  requestId: string,
  timestamp: number,
  body: string,
): Promise<string> {
  const key = await crypto.subtle.importKey(
    "raw",
    encoder.encode(secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const mac = await crypto.subtle.sign(
    "HMAC",
    key,
    encoder.encode(`${requestId}.${timestamp}.${body}`),
  );
  return `${SIGNATURE_VERSION},${hex(mac)}`;
}
