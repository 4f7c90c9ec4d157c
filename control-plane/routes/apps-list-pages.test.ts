// GET …/apps in pages (`limit`, `nextToken`, by name) for a client that wants them, and every app
// in one answer without them, as before: what `runlet apps` and the dashboard's Apps page read.
import { afterAll, beforeAll, expect, it } from "vitest";
import { bundleFiles } from "../testing/fixture.ts";
import { libsqlFixture } from "../testing/libsql.ts";
import { dashboardCookie } from "../testing/owner-rows.ts";

let f: Awaited<ReturnType<typeof libsqlFixture>>;
/** Deployed in this order; listed by name. */
const NAMES = ["kilo", "alpha", "echo", "bravo", "golf", "delta", "charlie"];
const BY_NAME = [...NAMES].sort();

beforeAll(async () => {
  f = await libsqlFixture();
  for (const name of NAMES) {
    const files = bundleFiles({
      "runlet.toml": `name = "${name}"\n`,
      "main.mjs": "export const run = () => 1;",
    });
    const res = await f.call("POST", `/v2/projects/${f.projectId}/apps`, { body: { files } });
    expect(res.status).toBe(201);
  }
});
afterAll(() => f.cleanup());

interface Page {
  apps: Array<{ name: string }>;
  hasMore: boolean;
  nextPageToken?: string;
  message?: string;
}

const list = async (query = "", projectId = f.projectId) => {
  const res = await f.call("GET", `/v2/projects/${projectId}/apps${query}`);
  return { status: res.status, body: (await res.json()) as Page };
};

it("gives every app without `limit` or `nextToken`, as before, and pages of them with it", async () => {
  const all = await list();
  expect(all.status).toBe(200);
  expect(all.body.apps.map((a) => a.name)).toEqual(BY_NAME);
  expect(all.body.hasMore).toBe(false);
  expect(all.body).not.toHaveProperty("nextPageToken");

  const pages: string[][] = [];
  let page = await list("?limit=3");
  for (let i = 0; i < 5; i++) {
    pages.push(page.body.apps.map((a) => a.name));
    if (!page.body.nextPageToken) break;
    expect(page.body.hasMore).toBe(true);
    page = await list(`?limit=3&nextToken=${page.body.nextPageToken}`);
  }
  expect(pages).toEqual([BY_NAME.slice(0, 3), BY_NAME.slice(3, 6), BY_NAME.slice(6)]);
  expect(page.body.hasMore).toBe(false);
  expect(page.body).not.toHaveProperty("nextPageToken");
  // A page that holds exactly the rest says there is no more.
  const exact = await list("?limit=7");
  expect(exact.body.apps).toHaveLength(7);
  expect(exact.body.hasMore).toBe(false);
});

it("refuses a bad `limit`, a garbled token or another project's token with 400 {message}", async () => {
  for (const query of ["?limit=0", "?limit=201", "?limit=x", "?nextToken=garbled", "?other=1"]) {
    const res = await list(query);
    expect(res.status, query).toBe(400);
    expect(typeof res.body.message).toBe("string");
  }
  const other = await f.addProject();
  const mine = await list("?limit=1");
  const elsewhere = await list(`?nextToken=${mine.body.nextPageToken}`, other);
  expect(elsewhere.status).toBe(400);
  expect(elsewhere.body.message).toMatch(/other filters/);
});

it("still shows every app on the dashboard's Apps page", async () => {
  const cookie = await dashboardCookie(f, f.projectId);
  const html = await (await f.app.request("/dashboard/apps", { headers: { cookie } })).text();
  const shown = [...html.matchAll(/<a href="\/dashboard\/apps\/([a-z]+)">/g)].map((m) => m[1]);
  expect(shown).toEqual(BY_NAME);
});
