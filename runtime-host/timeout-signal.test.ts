// The timeout of a host's requests to the control plane and the Worker fires even once the
// garbage collector has run: `AbortSignal.any([AbortSignal.timeout(ms), …])` did not on Node 20
// (nodejs/node#57736), and a heartbeat on a stalled link waited forever.
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { expect, it } from "vitest";
import { timeoutOr } from "./timeout-signal.ts";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

/** How `signal` ended, or "still waiting" after `boundMs` (a bound, far past its timeout). */
function ending(signal: AbortSignal, boundMs: number): Promise<string> {
  return new Promise((resolve) => {
    signal.addEventListener("abort", () => resolve((signal.reason as Error).name), { once: true });
    setTimeout(() => resolve("still waiting"), boundMs);
  });
}

it("times out after a garbage collection, nothing else holding the timer's signal", async () => {
  const stopped = new AbortController();
  const signal = timeoutOr(200, stopped.signal);
  const ended = ending(signal, 5_000);
  gc();
  await new Promise((r) => setTimeout(r, 50));
  gc();
  expect(await ended).toBe("TimeoutError");
});

it("aborts with the other signal's reason when that one aborts first", async () => {
  const stopped = new AbortController();
  const signal = timeoutOr(60_000, stopped.signal);
  stopped.abort(new DOMException("stopping", "AbortError"));
  expect(signal.aborted).toBe(true);
  expect((signal.reason as Error).name).toBe("AbortError");
  expect(timeoutOr(60_000, stopped.signal).aborted).toBe(true);
});

it("holds nothing on the other signal per request: many at once draw no leak warning", async () => {
  const warnings: string[] = [];
  const warned = (warning: Error) => warnings.push(warning.message);
  process.on("warning", warned);
  try {
    const stopped = new AbortController();
    const signals = Array.from({ length: 30 }, () => timeoutOr(60_000, stopped.signal));
    // Warnings are emitted on a later turn of the event loop.
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    expect(warnings).toEqual([]);
    stopped.abort(new DOMException("stopping", "AbortError"));
    expect(signals.every((signal) => signal.aborted)).toBe(true);
  } finally {
    process.off("warning", warned);
  }
});
