/**
 * What an attempt that got no answer records (`networkError`): workerd's "Network connection
 * lost." alone told a reader neither what happened nor where (test/client.test.ts sends a real
 * delivery to a closed port through a real stack).
 */
import { expect, it } from "vitest";
import { networkError } from "./deliver.ts";

it("says where it could not connect, with workerd's text after it", () => {
  expect(networkError("http://127.0.0.1:9/hook", "Network connection lost.")).toBe(
    "could not connect to 127.0.0.1:9, or it closed the connection before answering (Network connection lost.)",
  );
  expect(networkError("https://hooks.example.com/a/b", "Network connection lost.")).toMatch(
    /^could not connect to hooks\.example\.com:443,/,
  );
  expect(networkError("http://[::1]:8000/", "Network connection lost.")).toMatch(
    /^could not connect to \[::1\]:8000,/,
  );
});

it("names the host of any other error, and never the target's query", () => {
  const url = "https://hooks.example.com/secret-path?token=abc";
  expect(networkError(url, `failed to reach ${url}`)).toBe(
    "no answer from hooks.example.com:443: failed to reach https://hooks.example.com/secret-path",
  );
  expect(networkError("http://hooks.example.com/", "")).toBe(
    "no answer from hooks.example.com:80: network error",
  );
});
