import { describe, expect, it } from "vitest";
import { hasBearerToken } from "./auth.ts";

describe("hasBearerToken", () => {
  const token = "s3cret-token";

  it("accepts the exact token, with any case of the scheme", () => {
    expect(hasBearerToken(`Bearer ${token}`, token)).toBe(true);
    expect(hasBearerToken(`bearer ${token}`, token)).toBe(true);
  });

  it("refuses a missing header, another scheme, a prefix and an extension of the token", () => {
    expect(hasBearerToken(undefined, token)).toBe(false);
    expect(hasBearerToken("", token)).toBe(false);
    expect(hasBearerToken(`Basic ${token}`, token)).toBe(false);
    expect(hasBearerToken(`Bearer ${token.slice(0, -1)}`, token)).toBe(false);
    expect(hasBearerToken(`Bearer ${token}x`, token)).toBe(false);
    expect(hasBearerToken("Bearer ", "")).toBe(false);
  });
});
