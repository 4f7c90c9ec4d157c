// A script's --json holds for every failure, one that stops the command line from parsing too.
import { afterEach, expect, it, vi } from "vitest";
import { main } from "./main.ts";

afterEach(() => vi.restoreAllMocks());

it("answers a command line that does not parse with {message} on stdout under --json", async () => {
  const out = vi.spyOn(console, "log").mockImplementation(() => {});
  const err = vi.spyOn(console, "error").mockImplementation(() => {});
  for (const argv of [
    ["run", "hello", "--bogus", "--json"],
    ["runs", "--json", "--limit"],
  ]) {
    out.mockClear();
    expect(await main(argv)).toBe(1);
    expect(out).toHaveBeenCalledTimes(1);
    const body = JSON.parse(out.mock.calls[0]?.[0] as string) as { message: string };
    expect(body.message).not.toContain("Usage:");
    expect(body.message).toMatch(/--bogus|--limit/);
  }
  expect(err).not.toHaveBeenCalled();
});
