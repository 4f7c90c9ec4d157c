// runlet start's ports and host count: each wrong value said in one line, naming it and what it
// is; two components on one port refused before anything starts (round 13: RUNLET_API_PORT set
// to the control plane's port printed "Runlet is ready", then the Worker failed five times).
import { expect, it } from "vitest";
import { listenSetting, startSettingsFrom } from "./start-settings.ts";

it("takes the defaults, and the values given", () => {
  expect(startSettingsFrom({})).toEqual({
    ports: { control: 8080, api: 8787, host: 8790 },
    hosts: 1,
    listen: "127.0.0.1",
  });
  expect(
    startSettingsFrom({
      RUNLET_CONTROL_PORT: "48600",
      RUNLET_API_PORT: "48601",
      RUNLET_HOST_PORT: "48602",
      RUNLET_HOSTS: "3",
    }),
  ).toEqual({ ports: { control: 48600, api: 48601, host: 48602 }, hosts: 3, listen: "127.0.0.1" });
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

// RUNLET_LISTEN: where the control plane and the run API listen, and the address the runtime
// hosts call back at, so it must be one this machine has, and name it.
it("takes an address of this machine's for RUNLET_LISTEN, and says why not another", () => {
  const own = () => new Set(["127.0.0.1", "10.0.0.5"]);
  expect(listenSetting({}, own)).toBe("127.0.0.1");
  expect(listenSetting({ RUNLET_LISTEN: "10.0.0.5" }, own)).toBe("10.0.0.5");
  const must =
    "RUNLET_LISTEN must be one of this machine's IPv4 addresses, which other machines reach it at";
  expect(listenSetting({ RUNLET_LISTEN: "rack-1.local" }, own)).toBe(
    `${must} (it is 'rack-1.local', not an IPv4 address)`,
  );
  expect(listenSetting({ RUNLET_LISTEN: "0.0.0.0" }, own)).toBe(
    `${must} (it is '0.0.0.0', which listens everywhere but names no address to call back)`,
  );
  expect(listenSetting({ RUNLET_LISTEN: "10.0.0.6" }, own)).toBe(
    `${must} (it is '10.0.0.6', which no interface here has)`,
  );
  // Through the whole settings, with this machine's own interfaces: loopback is always one.
  expect(startSettingsFrom({ RUNLET_LISTEN: "127.0.0.1" })).toMatchObject({ listen: "127.0.0.1" });
  expect(startSettingsFrom({ RUNLET_LISTEN: "::1" })).toBe(
    `${must} (it is '::1', not an IPv4 address)`,
  );
});
