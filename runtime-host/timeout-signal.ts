/**
 * A signal that aborts after `ms` (a `TimeoutError`, as `AbortSignal.timeout`'s) or when `signal`
 * does, whichever comes first.
 *
 * Not `AbortSignal.any([AbortSignal.timeout(ms), signal])`: on Node 20 (nodejs/node#57736) the
 * timeout signal inside it is held only weakly, and once garbage-collected its timer never
 * aborts the composite. A fetch given such a signal waits as long as its peer does, forever
 * on a stalled link: a runtime host's heartbeat hung so, and with it every later heartbeat (they
 * go one at a time), and the registry showed the host down until the link came back. Here the
 * timer holds the controller, so it fires whatever the collector does.
 */
export function timeoutOr(ms: number, signal: AbortSignal): AbortSignal {
  const controller = new AbortController();
  const follow = () => controller.abort(signal.reason);
  const timer = setTimeout(
    () => controller.abort(new DOMException("The operation timed out.", "TimeoutError")),
    ms,
  );
  // The timer needs not keep the process alive: what waits on the signal does, if anything.
  timer.unref();
  controller.signal.addEventListener(
    "abort",
    () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", follow);
    },
    { once: true },
  );
  if (signal.aborted) follow();
  else signal.addEventListener("abort", follow, { once: true });
  return controller.signal;
}
