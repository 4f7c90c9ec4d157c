import { expect, it } from "vitest";
import { closest, didYouMean } from "./closest.ts";

const STATUSES = ["queued", "running", "success", "failure", "cancelled"];

it("finds the choice a typo, a letter case or another platform's word meant, and none for a word near none", () => {
  expect(closest("FAILURE", STATUSES)).toBe("failure");
  expect(closest("sucess", STATUSES)).toBe("success");
  expect(closest("fail", STATUSES)).toBe("failure");
  expect(closest("In Progress", STATUSES, { in_progress: "running" })).toBe("running");
  expect(closest("xyz", STATUSES)).toBeUndefined();
  expect(didYouMean("canceled", STATUSES)).toBe(" (did you mean 'cancelled'?)");
  expect(didYouMean("xyz", STATUSES)).toBe("");
  expect(didYouMean(["a", "b"], STATUSES)).toBe("");
});
