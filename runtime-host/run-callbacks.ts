/**
 * Sends an async run's end to its callback URL (the Worker's internal route
 * `/internal/apps/{project}/{app}/runs/{runId}/complete`), with a few tries: a lost callback is
 * not fatal, the Worker's watchdog asks the host for a run whose end did not come. A host that
 * stops gives every callback still being sent its remaining tries at once, within a bound.
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { HostRun } from "../common/protocol/host.ts";
import { whyFetchFailed } from "./fetch-failure.ts";
import { timeoutOr } from "./timeout-signal.ts";

/** The pause before each try (a lost callback is also askable). */
const RETRY_DELAYS_MS = [0, 1_000, 4_000];
/** Longest one try waits for the Worker's answer. */
const TRY_TIMEOUT_MS = 10_000;

export class RunCallbacks {
  readonly #sending = new Set<Promise<boolean>>();
  /** Aborted once the host stops: pauses end, tries are cut off at the stop's bound. */
  readonly #stopping = new AbortController();
  readonly #cutOff = new AbortController();

  constructor(private readonly internalToken: string) {}

  /**
   * Sends `run` (as it is now) to `url`, off the caller's path. Resolves with whether the Worker
   * took it (2xx, or a 4xx that another try would get as well), never rejects.
   */
  send(url: string, run: HostRun): Promise<boolean> {
    const sent = this.#send(url, JSON.stringify(run), run.runId);
    this.#sending.add(sent);
    void sent.then(() => this.#sending.delete(sent));
    return sent;
  }

  /** Waits for every callback being sent, at most `ms`; then cuts off what is left. */
  async close(ms: number): Promise<void> {
    this.#stopping.abort();
    const bound = new Promise<void>((resolve) => setTimeout(resolve, ms).unref());
    await Promise.race([Promise.all(this.#sending), bound]);
    this.#cutOff.abort();
  }

  async #send(url: string, body: string, runId: string): Promise<boolean> {
    let why = "";
    for (const delay of RETRY_DELAYS_MS) {
      if (this.#cutOff.signal.aborted) break;
      if (delay) await this.#pause(delay);
      try {
        const res = await fetch(url, {
          method: "POST",
          headers: {
            authorization: `Bearer ${this.internalToken}`,
            "content-type": "application/json",
          },
          body,
          signal: timeoutOr(TRY_TIMEOUT_MS, this.#cutOff.signal),
        });
        await res.arrayBuffer();
        if (res.ok || (res.status >= 400 && res.status < 500 && res.status !== 429)) return true;
        why = `answered ${res.status}`;
      } catch (err) {
        // Unreachable or timed out: try again.
        why = whyFetchFailed(err);
      }
    }
    // Where and why: a Worker this host cannot reach (its WORKER_URL, a loopback address seen
    // from another machine) is the operator's to fix; the watchdog's question is slower.
    console.error(
      `runtime host: could not report async run ${runId} to its callback ${new URL(url).origin} (${why || "stopping"}); the Worker's watchdog will ask this host for it instead`,
    );
    return false;
  }

  /** Waits `ms`, or not at all once the host stops; does not keep the process alive. */
  #pause(ms: number): Promise<void> {
    return sleep(ms, undefined, { signal: this.#stopping.signal, ref: false }).catch(() => {});
  }
}
