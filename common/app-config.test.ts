// How a runlet.toml the schema refuses is worded: the deploy's 400 is `runlet.toml: ` and this.
import { parse } from "smol-toml";
import { describe, expect, it } from "vitest";
import { appConfigSchema, describeConfigError, describeZodError } from "./app-config.ts";

const refusal = (toml: string) => {
  const parsed = appConfigSchema.safeParse(parse(toml));
  return parsed.success ? "accepted" : describeZodError(parsed.error);
};

it.each([
  // Zod's own words were 'Invalid option: expected one of "managed"|"custom"'.
  ['runtime = "manged"', 'runtime: must be "managed" or "custom"'],
  // A language for a runtime said only the line above, not which one a Python app is.
  [
    'runtime = "python"',
    'runtime: must be "managed" or "custom", not "python": a Python app, or any HTTP server of your own, is "custom", with a [custom] entrypoint such as ["python3", "server.py"]',
  ],
  // 'Too big: expected number to be <=43200', 'Too small: expected number to be >=1'.
  ["response_grace_period = 100000", "response_grace_period: must be at most 43200"],
  ["[scaling]\nmax_replicas = 0", "scaling.max_replicas: must be at least 1"],
  // 'Invalid input: expected number, received string', '… expected int, received number'.
  ['queue_timeout = "60"', "queue_timeout: must be a number, not a string"],
  ["start_timeout = 1801", "start_timeout: must be at most 1800"],
  ["start_timeout = 0", "start_timeout: must be at least 1"],
  ['start_timeout = "120"', "start_timeout: must be a number, not a string"],
  ["start_timeout = 2.5", "start_timeout: must be a whole number"],
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

describe("an unknown field of runlet.toml", () => {
  const said = (raw: Record<string, unknown>) => {
    const parsed = appConfigSchema.safeParse({ name: "a", ...raw });
    if (parsed.success) throw new Error("taken");
    return describeConfigError(parsed.error);
  };

  it("says what it was most likely meant to be: a typo, a name from elsewhere, a field of another table", () => {
    expect(said({ response_grace_periode: 10 })).toBe(
      "unknown field 'response_grace_periode' (did you mean response_grace_period?)",
    );
    expect(said({ timeout: 60 })).toBe(
      "unknown field 'timeout' (did you mean response_grace_period (seconds an async run may take)?)",
    );
    expect(said({ min_replicas: 1 })).toBe(
      "unknown field 'min_replicas' (did you mean [scaling] min_replicas?)",
    );
    expect(said({ scaling: { name: "b", max_replica: 2 } })).toBe(
      "scaling: unknown fields 'name' (did you mean name, at the top (before any [table])?), 'max_replica' (did you mean max_replicas?)",
    );
  });

  it("names it alone when nothing is close", () => {
    expect(said({ colour: "blue" })).toBe("unknown field 'colour'");
    // Any other problem reads as describeZodError says it.
    expect(said({ runtime: "manged" })).toBe('runtime: must be "managed" or "custom"');
  });
});

describe("start_timeout", () => {
  const parsed = (toml: string) => appConfigSchema.parse(parse(`name = "app"\n${toml}`));

  it("takes whole seconds from 1 to 1800, and is left out unless set (the host's 30 s)", () => {
    expect(parsed("start_timeout = 1").start_timeout).toBe(1);
    expect(parsed("start_timeout = 1800").start_timeout).toBe(1800);
    expect(parsed("").start_timeout).toBeUndefined();
  });

  it("is suggested for a near name, and for a table's field put at the top", () => {
    const said = (raw: Record<string, unknown>) => {
      const result = appConfigSchema.safeParse({ name: "a", ...raw });
      return result.success ? "taken" : describeConfigError(result.error);
    };
    expect(said({ start_timout: 60 })).toBe(
      "unknown field 'start_timout' (did you mean start_timeout?)",
    );
    expect(said({ scaling: { start_timeout: 60 } })).toBe(
      "scaling: unknown field 'start_timeout' (did you mean start_timeout, at the top (before any [table])?)",
    );
    expect(said({ startup_timeout: 60 })).toBe(
      "unknown field 'startup_timeout' (did you mean start_timeout (seconds a replica may take to be ready)?)",
    );
  });
});
