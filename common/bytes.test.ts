import { expect, it } from "vitest";
import { jsonBytesOver } from "./bytes.ts";

it("counts a result's JSON in UTF-8 bytes only past what is surely within the limit", () => {
  expect(jsonBytesOver({ a: 1 }, 100)).toBeUndefined();
  expect(jsonBytesOver(undefined, 100)).toBeUndefined(); // null
  expect(jsonBytesOver("x".repeat(98), 100)).toBeUndefined(); // 100 bytes with its quotes
  expect(jsonBytesOver("x".repeat(99), 100)).toBe(101);
  // 34 characters of 3 bytes each, and the quotes: 104 bytes of UTF-8.
  expect(jsonBytesOver("✓".repeat(34), 100)).toBe(104);
  expect(jsonBytesOver("✓".repeat(32), 100)).toBeUndefined(); // 98 bytes
});
