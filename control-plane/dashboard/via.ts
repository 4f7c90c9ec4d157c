/**
 * The dashboard calls the management API in-process (`app.request`), with the session's token.
 * Such a request carries this isolate's secret marker, so its audit entry can say where it came
 * from (`source: "dashboard"`) and name the browser's address rather than nobody's. A request
 * from outside cannot carry the marker: the secret never leaves this process.
 */
import type { Context } from "hono";
import { base64urlEncode } from "../../common/jwt.ts";

const MARK = "x-runlet-dashboard";
const CLIENT_IP = "x-runlet-dashboard-ip";
const REQUEST_ID = "x-runlet-dashboard-request";
/**
 * Drawn at the first use, not as the module loads: Workers allow no random values in an
 * isolate's global scope (the control plane on Workers would not start).
 */
let secret: string | undefined;
const theSecret = () => (secret ??= base64urlEncode(crypto.getRandomValues(new Uint8Array(32))));

/**
 * Headers of an in-process API request made for a browser request: its address, its user agent,
 * and its id (`X-Request-Id`), which the API request takes as its own, so that the audit entry of
 * a dashboard act has the id the browser was answered with.
 */
export function viaHeaders(browser: {
  ip: string | undefined;
  userAgent: string | undefined;
  requestId: string;
}) {
  const headers: Record<string, string> = { [MARK]: theSecret(), [REQUEST_ID]: browser.requestId };
  if (browser.ip) headers[CLIENT_IP] = browser.ip;
  if (browser.userAgent) headers["user-agent"] = browser.userAgent;
  return headers;
}

/** Set when `c` is the dashboard's own in-process request: the browser's address and request. */
export function viaDashboard(
  c: Context,
): { ip: string | null; requestId: string | undefined } | undefined {
  if (c.req.header(MARK) !== theSecret()) return undefined;
  return { ip: c.req.header(CLIENT_IP) ?? null, requestId: c.req.header(REQUEST_ID) };
}
