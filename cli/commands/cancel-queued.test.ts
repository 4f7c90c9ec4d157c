// `runlet cancel --app NAME --queued` against a real Node control plane (no Worker: nothing is
// cancelled here): an app that is not deployed is an error naming it, not "Cancelled 0".
import { afterAll, beforeAll, expect, it } from "vitest";
import { type FirstUser, runlet, withFirstUser } from "./test-support.ts";

let first: FirstUser;

beforeAll(async () => {
  first = await withFirstUser("cancel-queued", "first");
});

afterAll(() => first?.stop());

it("refuses an app that is not deployed (a mistyped name), rather than cancel nothing and exit 0", async () => {
  const done = await runlet(["cancel", "--app", "helo", "--queued"], first.env);
  expect(done.stdout).toBe("");
  expect(done.code).toBe(1);
  expect(done.stderr).toContain("app 'helo' is not deployed");
});
