/**
 * One webhook delivery attempt and the retry rules (docs/api.md, "Webhook delivery"). Each attempt is signed afresh
 * (its timestamp is the moment it is sent), has its own timeout and never follows a redirect;
 * what it ended with is recorded on the run.
 */
import { DEFAULT_BRAND, HEADER, webhookHeaders } from "../../common/consts.ts";
import { signDelivery } from "../../common/webhook-signature.ts";

/** "At most 3 attempts in total" (the specification's retry rules). */
export const MAX_ATTEMPTS = 3;
/** Pause before the 2nd and the 3rd attempt: "a delay of up to 5 seconds between attempts". */
export const RETRY_DELAYS_MS = [1_000, 4_000] as const;
/** Each attempt's own limit: past it the attempt counts as a network error (retried). */
export const ATTEMPT_TIMEOUT_MS = 10_000;

/** What the rules make of an attempt's end. */
export type Verdict = "delivered" | "retry" | "final";

export interface DeliveryAttempt {
  attempt: number;
  /** When it was sent (ms since the epoch). */
  at: number;
  /** The receiver's status, when it answered. */
  status?: number;
  /** Why no status: "timeout" or the network error. */
  error?: string;
  duration_ms: number;
  verdict: Verdict;
  /**
   * Written before the attempt is sent, replaced by how it ended: found so by a later instance,
   * the attempt was cut short (see `sendingAttempt`). Never shown.
   */
  sending?: true;
}

/**
 * The record of attempt `attempt` as it is sent, kept until it ends. Should the Worker stop
 * meanwhile, it stays as the attempt's record (the flag dropped): the attempt counts among the
 * three, as a network error whose arrival is unknown, so a crash never adds an attempt.
 */
export function sendingAttempt(attempt: number, at: number): DeliveryAttempt {
  return {
    attempt,
    at,
    error:
      "cut short: the Worker stopped while this attempt was under way, so whether the receiver got it is not known",
    duration_ms: 0,
    verdict: attempt >= MAX_ATTEMPTS ? "final" : "retry",
    sending: true,
  };
}

/**
 * The specification's retry table, row by row: network error (connection failure, timeout),
 * 404 and other non-2xx are retried; other 4xx and 5xx are final ("avoids duplicate side
 * effects"); 2xx is delivered. `undefined`: no answer (network error or timeout).
 */
export function verdictOf(status: number | undefined): Verdict {
  if (status === undefined) return "retry";
  if (status >= 200 && status < 300) return "delivered";
  if (status === 404) return "retry";
  if (status >= 400 && status < 500) return "final";
  if (status >= 500 && status < 600) return "final"; // avoids duplicate side effects
  return "retry"; // other non-2xx: 1xx, 3xx (redirects are not followed)
}

export interface Delivery {
  url: string;
  runId: string;
  /** The delivery body, exactly as sent and signed. */
  body: string;
  /** The caller's X-Webhook-Secret: the delivery is signed when there is one. */
  secret?: string;
  brand?: string;
}

export interface AttemptLimits {
  timeoutMs: number;
}

/** Sends attempt number `attempt` of `delivery` and says how it ended; never throws. */
export async function attemptDelivery(
  delivery: Delivery,
  attempt: number,
  limits: AttemptLimits = { timeoutMs: ATTEMPT_TIMEOUT_MS },
): Promise<DeliveryAttempt> {
  const at = Date.now();
  const headers = new Headers({
    "content-type": "application/json",
    [HEADER.requestId]: delivery.runId,
    // Some gateways and firewalls refuse a request without one.
    "user-agent": `${delivery.brand ?? DEFAULT_BRAND}-Webhooks/1`,
  });
  if (delivery.secret) {
    const timestamp = Math.floor(at / 1000);
    const names = webhookHeaders(delivery.brand);
    headers.set(names.timestamp, String(timestamp));
    headers.set(
      names.signature,
      await signDelivery(delivery.secret, delivery.runId, timestamp, delivery.body),
    );
  }
  let status: number | undefined;
  let error: string | undefined;
  try {
    const res = await fetch(delivery.url, {
      method: "POST",
      headers,
      body: delivery.body,
      redirect: "manual",
      signal: AbortSignal.timeout(limits.timeoutMs),
    });
    status = res.status;
    await res.body?.cancel();
  } catch (err) {
    const { name, message } = err as Error;
    error =
      name === "TimeoutError" || name === "AbortError"
        ? `timeout after ${limits.timeoutMs} ms`
        : networkError(delivery.url, message);
  }
  return {
    attempt,
    at,
    ...(status === undefined ? { error } : { status }),
    duration_ms: Date.now() - at,
    // The last attempt the table allows is final, whatever its row says.
    verdict: attempt >= MAX_ATTEMPTS && verdictOf(status) === "retry" ? "final" : verdictOf(status),
  };
}

/** workerd's one message for a connection refused, reset, or closed before the answer. */
const CONNECTION_LOST = "Network connection lost.";

/**
 * What an attempt that got no answer records: where it went (host and port) and what happened,
 * in words a reader can act on; the target's query, which may hold credentials, is cut out of
 * workerd's text. workerd says "Network connection lost." alike for a port nobody listens on and
 * for a receiver that closed the connection before answering: both are said, with its own text.
 */
export function networkError(url: string, message: string): string {
  const target = new URL(url);
  const port = target.port || (target.protocol === "https:" ? "443" : "80");
  const where = `${target.hostname}:${port}`;
  const query = target.search;
  const said = (query ? message.replaceAll(query, "") : message).trim();
  if (said === CONNECTION_LOST)
    return `could not connect to ${where}, or it closed the connection before answering (${said})`;
  return `no answer from ${where}: ${said || "network error"}`;
}

/**
 * After `attempts`, when the next attempt is due (ms since the epoch), or `undefined` when the
 * delivery has ended (delivered, refused for good, or out of attempts).
 */
export function nextAttemptAt(
  attempts: readonly DeliveryAttempt[],
  delaysMs: readonly number[] = RETRY_DELAYS_MS,
): number | undefined {
  const last = attempts.at(-1);
  if (!last) return Date.now();
  if (last.verdict !== "retry" || attempts.length >= MAX_ATTEMPTS) return undefined;
  return last.at + last.duration_ms + (delaysMs[attempts.length - 1] ?? 0);
}

/** How a delivery ended, once `nextAttemptAt` says it has. */
export function deliveryState(
  attempts: readonly DeliveryAttempt[],
): "pending" | "delivered" | "failed" {
  const last = attempts.at(-1);
  if (last?.verdict === "delivered") return "delivered";
  if (nextAttemptAt(attempts) !== undefined) return "pending";
  return "failed";
}
