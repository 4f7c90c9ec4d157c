/**
 * The control plane's refusal of a runtime host (docs/hosts.md, "Registration and heartbeats"):
 * a bad or revoked token, a bad registration, or its address or name held by another live host.
 */
import { DOWN_AFTER_MS } from "../common/protocol/hosts.ts";

/** The control plane will not take this host (a bad or revoked token, a bad registration). */
export class Refused extends Error {
  constructor(
    message: string,
    /**
     * 409: a live host has what this one asked for (this host before a restart?): the address
     * (under another join token), or the name (at another address).
     */
    readonly held?: "address" | "name",
  ) {
    super(message);
  }
}

/** The control plane's refusal of this host, in its own words when its answer has them. */
export function refusal(status: number, body: unknown): Refused {
  const said = body as { message?: string; held?: unknown } | undefined;
  const message = said?.message ?? `status ${status}`;
  // A control plane older than the name's check says no `held`: an address, then.
  const held = status !== 409 ? undefined : said?.held === "name" ? "name" : "address";
  return new Refused(`the control plane refused this host: ${message}`, held);
}

/**
 * How long a host whose address (or name) is held tries again: past the time the holder's entry is down
 * if it is silent (this host before a restart, SIGKILLed, under another token), and some slack.
 * Refused still after it, the holder is heard from: another host runs at that address.
 */
export const ADDRESS_WAIT_MS = DOWN_AFTER_MS + 5_000;

/**
 * Since when the host's address is held by another (its first refusal so logged), while it may
 * try again; else `err` is thrown: another refusal, or the address held past `waitMs`.
 */
export function stillHeld(err: Refused, since: number | undefined, waitMs: number): number {
  if (!err.held) throw err;
  if (since === undefined) {
    console.error(`runtime host: ${err.message}; trying again for up to ${waitMs / 1000} s`);
    return Date.now();
  }
  if (Date.now() - since < waitMs) return since;
  throw new Refused(
    `${err.message}. Still so after ${waitMs / 1000} s: that host is heard from, so it is another one: give this host its own ${err.held === "name" ? "name (--name)" : "address"}`,
  );
}
