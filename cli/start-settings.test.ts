// runlet start's ports and host count: each wrong value said in one line, naming it and what it
// is; two components on one port refused before anything starts (round 13: RUNLET_API_PORT set
// to the control plane's port printed "Runlet is ready", then the Worker failed five times).
import { expect, it } from "vitest";
import { startSettingsFrom } from "./start-settings.ts";

it("takes the defaults, and the values given", () => {
  expect(startSettingsFrom({})).toEqual({
    ports: { control: 8080, api: 8787, host: 8790 },
    hosts: 1,
  });
  expect(
    startSettingsFrom({
      RUNLET_CONTROL_PORT: "48600",
      RUNLET_API_PORT: "48601",
      RUNLET_HOST_PORT: "48602",
      RUNLET_HOSTS: "3",
    }),
  ).toEqual({ ports: { control: 48600, api: 48601, host: 48602 }, hosts: 3 });
});

it("says which setting is wrong and what it is", () => {
  expect(startSettingsFrom({ RUNLET_CONTROL_PORT: "abc" })).toBe(
    "RUNLET_CONTROL_PORT must be a whole number from 1 to 65535 (it is 'abc')",
  );
  expect(startSettingsFrom({ RUNLET_API_PORT: "70000" })).toBe(
    "RUNLET_API_PORT must be a whole number from 1 to 65535 (it is '70000')",
  );
  expect(startSettingsFrom({ RUNLET_HOSTS: "two" })).toBe(
    "RUNLET_HOSTS must be a whole number from 1 to 16 (it is 'two')",
  );
});

it("refuses one port for two components", () => {
  expect(startSettingsFrom({ RUNLET_CONTROL_PORT: "48650", RUNLET_API_PORT: "48650" })).toBe(
    "RUNLET_CONTROL_PORT and RUNLET_API_PORT are both 48650: each component needs a port of its own",
  );
  expect(startSettingsFrom({ RUNLET_HOST_PORT: "8787" })).toBe(
    "RUNLET_API_PORT and RUNLET_HOST_PORT are both 8787: each component needs a port of its own",
  );
});
