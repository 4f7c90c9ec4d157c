/** A token's expiry as the routes that mint tokens take it: RFC 3339, ahead, at most 10 years. */
import { MAX_TOKEN_LIFETIME_DAYS as MAX_LIFETIME_DAYS } from "../../common/token-state.ts";
import { ApiError } from "../errors.ts";
import { rfc3339Time } from "../openapi.ts";

export const expiresAtSchema = rfc3339Time(
  "must be an RFC 3339 date-time, like 2027-01-31T00:00:00Z",
);

/** The expiry in Unix milliseconds; 400 naming `expiresAt` if it is past or too far ahead. */
export function expiryMs(expiresAt: string, now: number): number {
  const expires = Date.parse(expiresAt);
  if (expires <= now) throw new ApiError("bad_request", "expiresAt: must be in the future");
  if (expires > now + MAX_LIFETIME_DAYS * 86_400_000) {
    throw new ApiError("bad_request", `expiresAt: must be within ${MAX_LIFETIME_DAYS} days`);
  }
  return expires;
}
