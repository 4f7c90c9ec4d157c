/**
 * A token's state as the lists show it (`runlet tokens list`, the dashboard's service accounts
 * and users): revoked (or none: no expiry), expired, refused since the key that signed it was
 * retired, else active — the first that holds, in that order.
 */
/** How far ahead a token's expiry may be set: the control plane refuses more, the CLI too. */
export const MAX_TOKEN_LIFETIME_DAYS = 3650;

export type TokenState = "revoked" | "expired" | "key retired" | "active";

export function tokenState(
  token: { revokedAt?: string | null; expiresAt: string | null; keyRetiredAt?: string | null },
  now = Date.now(),
): TokenState {
  if (token.revokedAt || !token.expiresAt) return "revoked";
  if (Date.parse(token.expiresAt) <= now) return "expired";
  return token.keyRetiredAt ? "key retired" : "active";
}
