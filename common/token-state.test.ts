import { expect, it } from "vitest";
import { tokenState } from "./token-state.ts";

it("says revoked, expired, key retired or active: the first that holds", () => {
  const now = Date.parse("2026-11-26T12:00:00Z");
  const later = "2026-12-26T12:00:00Z";
  const earlier = "2026-10-26T12:00:00Z";
  const retired = { keyRetiredAt: earlier };
  expect(tokenState({ expiresAt: later }, now)).toBe("active");
  expect(tokenState({ expiresAt: later, keyRetiredAt: null }, now)).toBe("active");
  expect(tokenState({ expiresAt: later, ...retired }, now)).toBe("key retired");
  expect(tokenState({ expiresAt: earlier, ...retired }, now)).toBe("expired");
  expect(tokenState({ expiresAt: earlier, revokedAt: earlier, ...retired }, now)).toBe("revoked");
  // A user with no live token: none to expire.
  expect(tokenState({ expiresAt: null }, now)).toBe("revoked");
});
