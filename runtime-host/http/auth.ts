import { createHash, timingSafeEqual } from "node:crypto";

const digest = (value: string) => createHash("sha256").update(value).digest();

/** Whether an `Authorization` header carries `Bearer <token>`; compared in constant time. */
export function hasBearerToken(header: string | undefined, token: string): boolean {
  const match = /^Bearer[ ]+(\S+)\s*$/i.exec(header ?? "");
  const given = match?.[1] ?? "";
  // Hashing first makes both sides the same length, so the comparison leaks neither.
  return timingSafeEqual(digest(given), digest(token)) && given.length > 0;
}
