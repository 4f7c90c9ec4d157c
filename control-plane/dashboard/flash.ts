/**
 * A value shown once on the page a form redirects to (Post/Redirect/Get): a new token must
 * appear once, must not come back on a reload, and must never be in an address. It rides in a
 * short-lived HttpOnly cookie scoped to the page that shows it, which deletes it as it reads it.
 */
import type { Context } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";

const NAME = "runlet_once";

/**
 * Past this many bytes a browser may drop the cookie (its limit is about 4 KB, name and
 * attributes included), and the page would show nothing: long strings are cut first.
 */
const MOST_BYTES = 3_000;
const CUT_CHARS = 200;

/** `value` small enough to ride in the cookie: what was typed, cut if it was long. */
function fitted(value: unknown): string {
  const whole = encodeURIComponent(JSON.stringify(value));
  if (whole.length <= MOST_BYTES || typeof value !== "object" || value === null) return whole;
  const cut = Object.fromEntries(
    Object.entries(value).map(([k, v]) => [
      k,
      typeof v === "string" && v.length > CUT_CHARS ? `${v.slice(0, CUT_CHARS)}…` : v,
    ]),
  );
  return encodeURIComponent(JSON.stringify(cut));
}

export function setFlash(c: Context, path: string, value: unknown): void {
  setCookie(c, NAME, fitted(value), {
    path,
    httpOnly: true,
    sameSite: "Strict",
    secure: new URL(c.req.url).protocol === "https:",
    maxAge: 60,
  });
}

export function takeFlash<T>(c: Context, path: string): T | undefined {
  const raw = getCookie(c, NAME);
  if (raw === undefined) return undefined;
  deleteCookie(c, NAME, { path });
  try {
    return JSON.parse(decodeURIComponent(raw)) as T;
  } catch {
    return undefined;
  }
}
