// `runlet dashboard [page]` against a stand-in control plane: which page the sign-in link lands
// on, and which pages it refuses before asking for a link. The link itself, in a browser, is
// test/dashboard.test.ts.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, beforeEach, expect, it } from "vitest";
import { ENV } from "../../common/consts.ts";
import { landingOf } from "./dashboard.ts";
import { runlet } from "./test-support.ts";

const LINK = "http://127.0.0.1/dashboard/login?ticket=t1";
const asked: string[] = [];
let server: ReturnType<typeof createServer>;
let env: Record<string, string>;

beforeAll(async () => {
  server = createServer((req, res) => {
    asked.push(`${req.method} ${req.url}`);
    res.writeHead(201, { "content-type": "application/json" });
    res.end(JSON.stringify({ url: LINK, expiresAt: "2026-11-27T00:05:00.000Z" }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  env = { [ENV.baseUrl]: url, [ENV.apiUrl]: url, [ENV.project]: "prj_1", [ENV.token]: "t" };
});
afterAll(() => new Promise((resolve) => server.close(resolve)));
beforeEach(() => {
  asked.length = 0;
});

it("lands on a dashboard path as the browser resolves it", () => {
  expect(landingOf("apps/hello")).toBe("/dashboard/apps/hello");
  expect(landingOf("/dashboard/runs/run_1")).toBe("/dashboard/runs/run_1");
  expect(landingOf("runs?status=failure")).toBe("/dashboard/runs?status=failure");
  expect(landingOf("https://runlet.example.com/dashboard/apps/x")).toBe("/dashboard/apps/x");
  // `..` that stays inside the dashboard is a dashboard page still.
  expect(landingOf("apps/../runs")).toBe("/dashboard/runs");
});

it("refuses a page whose `..` leads out of /dashboard, naming where it leads, and asks for no link", async () => {
  for (const [page, leads] of [
    ["../../v2/projects", "/v2/projects"],
    ["runs/../../v2/projects", "/v2/projects"],
    ["%2e%2e/v2/projects", "/v2/projects"],
    ["..\\v2\\projects", "/v2/projects"],
    ["/dashboard/../v2/projects", "/v2/projects"],
  ] as const) {
    const refused = await runlet(["dashboard", page, "--json"], env);
    expect(refused.code, page).toBe(1);
    expect(JSON.parse(refused.stdout)).toEqual({
      message: `'${page}' is not a dashboard page (it leads to ${leads}): give one under /dashboard, as apps/hello or /dashboard/runs/run_…`,
    });
  }
  for (const page of ["/v2/projects", "//elsewhere.example/dashboard/runs"]) {
    const refused = await runlet(["dashboard", page], env);
    expect(refused.code, page).toBe(1);
    expect(refused.stderr).toContain(
      `runlet dashboard: '${page}' is not a dashboard page: give one under /dashboard`,
    );
  }
  expect(asked).toEqual([]);
});

it("refuses a page under none of the dashboard's sections, naming the one likely meant", async () => {
  // Its link signed in and landed on the dashboard's "not found" page.
  const refused = await runlet(["dashboard", "run/run_1", "--json"], env);
  expect(refused.code).toBe(1);
  expect(JSON.parse(refused.stdout)).toEqual({
    message:
      "'run/run_1' is not a dashboard page: its pages are under runs, apps, api-keys, audit-log, secrets, hosts, project (did you mean 'runs'?)",
  });
  expect(asked).toEqual([]);
  expect(landingOf("/dashboard")).toBe("/dashboard");
  expect(landingOf("project/delete")).toBe("/dashboard/project/delete");
  expect(landingOf("audit-log?outcome=failure")).toBe("/dashboard/audit-log?outcome=failure");
});

it("sends the resolved page as the link's next", async () => {
  const printed = await runlet(["dashboard", "apps/../runs/run_1", "--json"], env);
  expect(printed.code, printed.stderr).toBe(0);
  expect(asked).toEqual(["POST /v2/projects/prj_1/dashboard-links"]);
  expect(JSON.parse(printed.stdout)).toEqual({
    url: `${LINK}&next=${encodeURIComponent("/dashboard/runs/run_1")}`,
  });
});
