// An async run's end that cannot reach the Worker: the host's log says where it tried and why
// (found in round 13 with a host in another network namespace, whose callbacks went to the
// Worker's loopback address: the log said only "could not report async run … to its callback").
import { afterEach, expect, it, vi } from "vitest";
import { freePort } from "../cli/processes.ts";
import { RunCallbacks } from "./run-callbacks.ts";

afterEach(() => {
  vi.restoreAllMocks();
});

it("names the callback's address and the reason when the Worker cannot be reached", async () => {
  const logged: string[] = [];
  vi.spyOn(console, "error").mockImplementation((line: string) => {
    logged.push(line);
  });
  const port = await freePort(); // nothing listens there
  const callbacks = new RunCallbacks("internal-token");
  const url = `http://127.0.0.1:${port}/internal/apps/p/a/runs/run_1/complete`;
  const sent = await callbacks.send(url, { runId: "run_1" } as never);
  expect(sent).toBe(false);
  expect(logged).toEqual([
    `runtime host: could not report async run run_1 to its callback http://127.0.0.1:${port} (fetch failed: connect ECONNREFUSED 127.0.0.1:${port}); the Worker's watchdog will ask this host for it instead`,
  ]);
}, 20_000);
