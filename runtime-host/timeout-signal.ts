/**
 * A signal that aborts after `ms` (a `TimeoutError`, as `AbortSignal.timeout`'s) or when `signal`
 * does, whichever comes first.
 *
 * Not `AbortSignal.any([AbortSignal.timeout(ms), signal])`: on Node 20 (nodejs/node#57736) the
 * timeout signal inside it is held only weakly, and once garbage-collected its timer never
 * aborts the composite. A fetch given such a signal waits as long as its peer does, forever
 * on a stalled link: a runtime host's heartbeat hung so, and with it every later heartbeat (they
 * go one at a time), and the registry showed the host down until the link came back. Here the
 * timer holds its controller, so it fires whatever the collector does. `AbortSignal.any` still
 * joins the two: it adds no listener to `signal`, which lives as long as the host and would
 * otherwise hold one per request until its timeout (eleven at once drew Node's "possible
 * EventTarget memory leak" warning).
 */
export function timeoutOr(ms: number, signal: AbortSignal): AbortSignal {
  const timeout = new AbortController();
  // The timer needs not keep the process alive: what waits on the signal does, if anything.
  setTimeout(
    () => timeout.abort(new DOMException("The operation timed out.", "TimeoutError")),
    ms,
  ).unref();
  return AbortSignal.any([timeout.signal, signal]);
}
