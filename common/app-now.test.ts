// The words an app's queue is shown in (runlet apps show, the dashboard's app page): a queue that
// waits because no runtime host takes work says so; one on its way, or an older control plane's
// answer without the count, says nothing more.
import { expect, it } from "vitest";
import { runsNowText, stalledText } from "./app-now.ts";

it("says why queued runs wait when no host takes work, and nothing otherwise", () => {
  const queued = { queued: 3, running: 0 };
  expect(runsNowText(queued) + stalledText(queued, 0)).toBe(
    "3 queued, 0 running — no runtime host takes work now (each is down, stopping or drained): they wait for one",
  );
  expect(stalledText(queued, 1)).toBe("");
  expect(stalledText(queued, undefined)).toBe(""); // a control plane older than this CLI
  expect(stalledText({ queued: 0, running: 0 }, 0)).toBe("");
});
