import { expect, it } from "vitest";
import { type Host, hostRow } from "./hosts.ts";

const host: Host = {
  id: "hst_1",
  name: "rack-2",
  address: "http://10.0.0.2:8790",
  state: "up",
  slots: 8,
  busy: 3,
  queued: 1,
  seenAt: "2026-11-26T10:00:00.000Z",
  apps: [{ project: "prj_1", app: "hello", replicas: 2 }],
};

it("shows an up host's load and apps as its heartbeat says", () => {
  const now = Date.parse("2026-11-26T10:00:01.000Z");
  expect(hostRow(host, now)).toEqual([
    "hst_1",
    "rack-2",
    "http://10.0.0.2:8790",
    "up",
    "3/8",
    "1",
    "hello×2",
  ]);
});

it("shows a down host's silence and its last apps as the past, not as running now", () => {
  const now = Date.parse("2026-11-26T10:03:00.000Z");
  expect(hostRow({ ...host, state: "down" }, now)).toEqual([
    "hst_1",
    "rack-2",
    "http://10.0.0.2:8790",
    "down, silent 3 min",
    "—",
    "—",
    "last: hello×2",
  ]);
});
