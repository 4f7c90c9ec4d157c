/**
 * A shard's hand-overs to the runtime host: which queued runs go next, how many may be open at
 * once, and the pause after a host that was busy or unreachable. In memory only: hand-overs
 * open in an instance end with it, and their runs are still queued in the store.
 */
import type { Target } from "../placement.ts";
import { SHARDS } from "./limits.ts";
import type { RunStore } from "./store.ts";

/** Pauses before handing runs over again to a host that was busy or unreachable. */
const PAUSE_MIN_MS = 250;
const PAUSE_MAX_MS = 5_000;

/**
 * How many runs a shard hands over at once: its share of the app's capacity, and one more, so
 * each shard's oldest run is always at the host (which starts the oldest first).
 */
export function windowOf(capacity: number): number {
  return Math.min(capacity, Math.ceil(capacity / SHARDS) + 1);
}

export class Dispatch {
  /**
   * Hand-overs waiting for the host's answer: since when, and to which host once chosen.
   * Aborting one withdraws its run.
   */
  readonly #open = new Map<string, { withdraw: AbortController; since: number; host?: Target }>();
  /** Queued runs some hosts could not start a replica for (elsewhere): those hosts, and why. */
  readonly #passedOver = new Map<string, { urls: Set<string>; message: string }>();
  #pausedUntil = 0;
  #pauseMs = 0;

  get openCount(): number {
    return this.#open.size;
  }

  /** The queued runs to hand over now, oldest first (none while paused or the window is full). */
  next(store: RunStore, capacity: number, queued: number): string[] {
    const window = windowOf(capacity);
    if (this.#pausedUntil > Date.now() || this.#open.size >= window || queued <= this.#open.size)
      return [];
    const ids = store.oldestQueued(window).filter((id) => !this.#open.has(id));
    return ids.slice(0, window - this.#open.size);
  }

  /** A hand-over of `id` begins; the signal withdraws it. */
  begin(id: string): AbortSignal {
    const withdraw = new AbortController();
    this.#open.set(id, { withdraw, since: Date.now() });
    return withdraw.signal;
  }

  /** The open hand-over of `id` went to `host`. */
  sentTo(id: string, host: Target): void {
    const open = this.#open.get(id);
    if (open) open.host = host;
  }

  /** The host an open hand-over of `id` went to (its row says so once the host answered). */
  hostOf(id: string): Target | undefined {
    return this.#open.get(id)?.host;
  }

  /** The hosts holding a hand-over that began at `before` or earlier. */
  hostsWaitedOn(before: number): string[] {
    const hosts = new Set<string>();
    for (const { since, host } of this.#open.values())
      if (host && since <= before) hosts.add(host.url);
    return [...hosts];
  }

  /** Calls off every open hand-over to the host at `url` (it does not answer). */
  withdrawFrom(url: string): void {
    for (const open of this.#open.values()) if (open.host?.url === url) open.withdraw.abort();
  }

  end(id: string): void {
    this.#open.delete(id);
  }

  /** The host at `url` could not start a replica for `id` (`message`): the next goes elsewhere. */
  passOver(id: string, url: string, message: string): void {
    const known = this.#passedOver.get(id);
    if (known) Object.assign(known, { message }).urls.add(url);
    else this.#passedOver.set(id, { urls: new Set([url]), message });
  }

  /** The hosts passed over for `id`, if any. */
  passedOver(id: string): { urls: ReadonlySet<string>; message: string } | undefined {
    return this.#passedOver.get(id);
  }

  /** `id` left the queue: the hosts passed over for it are of no more use. */
  left(id: string): void {
    this.#passedOver.delete(id);
  }

  /** Calls off the open hand-over of `id`, if any; true if there was one. */
  withdraw(id: string): boolean {
    const open = this.#open.get(id);
    open?.withdraw.abort();
    return open !== undefined;
  }

  /** The host was busy or unreachable: hand nothing over for a growing pause. */
  pause(): void {
    if (this.#pausedUntil > Date.now()) return;
    this.#pauseMs = Math.min(Math.max(this.#pauseMs * 2, PAUSE_MIN_MS), PAUSE_MAX_MS);
    this.#pausedUntil = Date.now() + this.#pauseMs;
  }

  /** The host answered: the next pause starts short again. */
  answered(): void {
    this.#pauseMs = 0;
  }

  /** Ends a pause at once (the shard was woken). */
  resume(): void {
    this.#pausedUntil = 0;
  }

  /** When the current pause ends, if one is under way. */
  pausedUntil(): number | undefined {
    return this.#pausedUntil > Date.now() ? this.#pausedUntil : undefined;
  }
}
