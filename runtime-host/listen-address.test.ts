import { expect, it } from "vitest";
import { listenAddressOf } from "./listen-address.ts";

it("listens on the IP address a host gives, and on loopback behind a name (a tunnel's)", () => {
  expect(listenAddressOf("http://10.1.2.3:8790")).toBe("10.1.2.3");
  expect(listenAddressOf("http://[fd00::7]:8790")).toBe("fd00::7");
  // A tunnel's name resolves to the tunnel, not to this machine: listening there had failed.
  expect(listenAddressOf("https://host-1.example.com")).toBeUndefined();
  expect(listenAddressOf(undefined)).toBeUndefined();
});
