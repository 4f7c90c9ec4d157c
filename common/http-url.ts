/**
 * The one check of an address Runlet is given to call or to hand on (a webhook, a run's
 * callback, the control plane's or the run API's address, a host's own): an absolute URL, as
 * the WHATWG parser reads it, whose scheme is http or https. What else a caller asks of it
 * (no credentials, no private target, https off this machine) it says beside its own check.
 * Imports nothing: the Worker (on workerd), the runtime host and the CLI share it.
 */

/** `raw` parsed, if it is an absolute http(s) URL. */
export function parseHttpUrl(raw: string): URL | undefined {
  if (!URL.canParse(raw)) return undefined;
  const url = new URL(raw);
  return url.protocol === "http:" || url.protocol === "https:" ? url : undefined;
}
