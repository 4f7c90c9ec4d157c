/**
 * The waits of `runlet/client`'s `waitFor` (index.mjs): the pause between two reads, and the
 * signal that ends a read which has had no answer by the deadline.
 */

/** The longest delay `setTimeout` takes: a longer one fires at once. */
const LONGEST_TIMER_MS = 2 ** 31 - 1;

/**
 * Waits `ms`, or rejects with the signal's reason once it aborts.
 *
 * @param {number} ms
 * @param {AbortSignal | undefined} signal
 * @returns {Promise<void>}
 */
export function pause(ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * The signal of one read: it aborts with the caller's `signal` (and its reason), or once
 * `deadline` (ms since the epoch) has passed, when `expired()` is then true — a server that takes
 * the request and never answers cannot hold `waitFor` past its `timeoutMs`. `done()` once read.
 *
 * @param {number} deadline
 * @param {AbortSignal | undefined} signal
 */
export function readUntil(deadline, signal) {
  const controller = new AbortController();
  let expired = false;
  const onAbort = () => controller.abort(signal?.reason);
  const left = Math.max(0, deadline - Date.now());
  // An unbounded wait (Infinity) has no deadline to keep.
  const timer =
    left <= LONGEST_TIMER_MS
      ? setTimeout(() => {
          expired = true;
          controller.abort(new Error("the read had no answer before the deadline"));
        }, left)
      : undefined;
  if (signal?.aborted) onAbort();
  else signal?.addEventListener("abort", onAbort, { once: true });
  return {
    signal: controller.signal,
    expired: () => expired,
    done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
    },
  };
}
