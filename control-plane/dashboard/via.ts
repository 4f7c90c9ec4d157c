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
/**
 * Drawn at the first use, not as the module loads: Workers allow no random values in an
 * isolate's global scope (the control plane on Workers would not start).
 */
let secret: string | undefined;
const theSecret = () => (secret ??= base64urlEncode(crypto.getRandomValues(new Uint8Array(32))));

/** Headers of an in-process API request made for the browser request `c`. */
export function viaHeaders(ip: string | undefined, userAgent: string | undefined) {
  const headers: Record<string, string> = { [MARK]: theSecret() };
  if (ip) headers[CLIENT_IP] = ip;
  if (userAgent) headers["user-agent"] = userAgent;
  return headers;
}

/** Set when `c` is the dashboard's own in-process request: the browser's address. */
export function viaDashboard(c: Context): { ip: string | null } | undefined {
  if (c.req.header(MARK) !== theSecret()) return undefined;
  return { ip: c.req.header(CLIENT_IP) ?? null };
}
