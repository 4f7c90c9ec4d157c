// How a runlet.toml the schema refuses is worded: the deploy's 400 is `runlet.toml: ` and this.
import { parse } from "smol-toml";
import { expect, it } from "vitest";
import { appConfigSchema, describeZodError } from "./app-config.ts";

const refusal = (toml: string) => {
  const parsed = appConfigSchema.safeParse(parse(toml));
  return parsed.success ? "accepted" : describeZodError(parsed.error);
};

it.each([
  // Zod's own words were 'Invalid option: expected one of "managed"|"custom"'.
  ['runtime = "manged"', 'runtime: must be "managed" or "custom"'],
  // 'Too big: expected number to be <=43200', 'Too small: expected number to be >=1'.
  ["response_grace_period = 100000", "response_grace_period: must be at most 43200"],
  ["[scaling]\nmax_replicas = 0", "scaling.max_replicas: must be at least 1"],
  // 'Invalid input: expected number, received string', '… expected int, received number'.
  ['queue_timeout = "60"', "queue_timeout: must be a number, not a string"],
  ["[scaling]\ncooldown = 1.5", "scaling.cooldown: must be a whole number"],
  ["scaling = 3", "scaling: must be an object, not a number"],
  // 'Invalid string: must start with "/"', 'Too small: expected string to have >=1 characters'.
  [
    'runtime = "custom"\n[custom]\nentrypoint = ["x"]\nhealthcheck = "health"',
    'custom.healthcheck: must start with "/"',
  ],
  ['runtime = "custom"\n[custom]\nentrypoint = [""]', "custom.entrypoint.0: must not be empty"],
])("words %j as a person would: %s", (toml, message) => {
  expect(refusal(`name = "app"\n${toml}`)).toBe(message);
});

it("keeps the schema's own words, and says a missing field is required", () => {
  expect(refusal('name = "app"\nruntime = "custom"\n[custom]\nentrypoint = "node s.mjs"')).toBe(
    'custom.entrypoint: must be an array: the program and its arguments, such as ["node", "server.mjs"]',
  );
  expect(refusal('name = "App"')).toMatch(/^name: must start with a lowercase letter/);
  expect(refusal('runtime = "managed"')).toBe("name: is required");
  expect(refusal('name = "app"\ntimeout = 60')).toBe("unknown field 'timeout'");
});
