/**
 * The control plane's refusal of a runtime host (docs/hosts.md, "Registration and heartbeats"):
 * a bad or revoked token, a bad registration, or its address held by another live host.
 */
import { DOWN_AFTER_MS } from "../common/protocol/hosts.ts";

/** The control plane will not take this host (a bad or revoked token, a bad registration). */
export class Refused extends Error {
  constructor(
    message: string,
    /** 409: a live host of another join token has the address (this host before a restart?). */
    readonly addressHeld = false,
  ) {
    super(message);
  }
}

/** The control plane's refusal of this host, in its own words when its answer has them. */
export function refusal(status: number, body: unknown): Refused {
  const message = (body as { message?: string } | undefined)?.message ?? `status ${status}`;
  return new Refused(`the control plane refused this host: ${message}`, status === 409);
}

/**
 * How long a host whose address is held tries again: past the time the holder's entry is down
 * if it is silent (this host before a restart, SIGKILLed, under another token), and some slack.
 * Refused still after it, the holder is heard from: another host runs at that address.
 */
export const ADDRESS_WAIT_MS = DOWN_AFTER_MS + 5_000;

/**
 * Since when the host's address is held by another (its first refusal so logged), while it may
 * try again; else `err` is thrown: another refusal, or the address held past `waitMs`.
 */
export function stillHeld(err: Refused, since: number | undefined, waitMs: number): number {
  if (!err.addressHeld) throw err;
  if (since === undefined) {
    console.error(`runtime host: ${err.message}; trying again for up to ${waitMs / 1000} s`);
    return Date.now();
  }
  if (Date.now() - since < waitMs) return since;
  throw new Refused(
    `${err.message}. Still so after ${waitMs / 1000} s: that host is heard from, so it is another one: give this host its own address`,
  );
}
