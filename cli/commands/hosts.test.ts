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

it("names a host's busiest apps and counts the rest: 150 apps warm made one line of 1,900 characters", () => {
  const apps = Array.from({ length: 150 }, (_, i) => ({
    project: "prj_1",
    app: `app-${String(149 - i).padStart(3, "0")}`,
    replicas: i === 120 ? 3 : 1,
  }));
  const [, , , , , , shown] = hostRow({ ...host, apps });
  expect(shown).toBe("app-029×3 app-000×1 app-001×1 app-002×1 app-003×1 app-004×1 +144 more");
});

it("shows a stopped host as stopped, since when, running nothing: it is not one that crashed", () => {
  const now = Date.parse("2026-11-26T10:03:00.000Z");
  expect(hostRow({ ...host, state: "stopped", apps: [] }, now)).toEqual([
    "hst_1",
    "rack-2",
    "http://10.0.0.2:8790",
    "stopped 3 min ago",
    "—",
    "—",
    "—",
  ]);
});
