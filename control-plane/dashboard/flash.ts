/**
 * A value shown once on the page a form redirects to (Post/Redirect/Get): a new token must
 * appear once, must not come back on a reload, and must never be in an address. It rides in a
 * short-lived HttpOnly cookie scoped to the page that shows it, which deletes it as it reads it.
 */
import type { Context } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";

const NAME = "runlet_once";

export function setFlash(c: Context, path: string, value: unknown): void {
  setCookie(c, NAME, encodeURIComponent(JSON.stringify(value)), {
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
