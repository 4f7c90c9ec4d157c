import { expect, it } from "vitest";
import { newId, timeOfId } from "./ids.ts";

it("reads back the creation time an id carries, and nothing from other strings", () => {
  const at = Date.UTC(2026, 10, 23, 9, 30, 0, 123);
  expect(timeOfId(newId("run", at))).toBe(at);
  expect(timeOfId(newId("run"))).toBeLessThanOrEqual(Date.now());
  for (const junk of ["run_test", "", "run_0000000000", `run_${"i".repeat(26)}`])
    expect(timeOfId(junk)).toBeUndefined();
});
