// An app deployed many times: GET …/versions in pages (`limit`, `nextToken`), and the dashboard's
// app page showing the newest versions with a next page, not every version it ever had.
import { afterAll, beforeAll, expect, it } from "vitest";
import { bundleFiles } from "../testing/fixture.ts";
import { libsqlFixture } from "../testing/libsql.ts";
import { dashboardCookie } from "../testing/owner-rows.ts";

let f: Awaited<ReturnType<typeof libsqlFixture>>;
const DEPLOYS = 25;

beforeAll(async () => {
  f = await libsqlFixture();
  for (let i = 0; i < DEPLOYS; i++) {
    const files = bundleFiles({
      "runlet.toml": 'name = "busy"\n',
      "main.mjs": `export const run = () => ${i};`,
    });
    const res = await f.call("POST", `/v2/projects/${f.projectId}/apps`, { body: { files } });
    expect(res.status).toBe(201);
  }
});
afterAll(() => f.cleanup());

interface Page {
  versions: Array<{ version: number }>;
  hasMore: boolean;
  nextPageToken?: string;
}

const versions = async (query = "") => {
  const res = await f.call("GET", `/v2/projects/${f.projectId}/apps/busy/versions${query}`);
  return { status: res.status, body: (await res.json()) as Page & { message?: string } };
};

it("gives every version without `limit`, and pages of them with it", async () => {
  const all = await versions();
  expect(all.body.versions.map((v) => v.version)).toEqual(
    Array.from({ length: DEPLOYS }, (_, i) => DEPLOYS - i),
  );
  expect(all.body.hasMore).toBe(false);
  expect(all.body).not.toHaveProperty("nextPageToken");

  const seen: number[] = [];
  let page = await versions("?limit=10");
  for (let i = 0; i < 5; i++) {
    seen.push(...page.body.versions.map((v) => v.version));
    if (!page.body.nextPageToken) break;
    expect(page.body.hasMore).toBe(true);
    page = await versions(`?limit=10&nextToken=${page.body.nextPageToken}`);
  }
  expect(seen).toEqual(all.body.versions.map((v) => v.version));
  expect(page.body.hasMore).toBe(false);
  expect(page.body).not.toHaveProperty("nextPageToken");
});

it("refuses a bad `limit` or page token with 400 {message}", async () => {
  for (const query of ["?limit=0", "?limit=201", "?nextToken=garbled", "?other=1"]) {
    const res = await versions(query);
    expect(res.status).toBe(400);
    expect(typeof res.body.message).toBe("string");
  }
});

it("shows the newest 20 versions on the app's dashboard page, the older ones on the next", async () => {
  const cookie = await dashboardCookie(f, f.projectId);
  const versionsOf = (html: string) => {
    const table = html.split('<table aria-label="Versions"')[1]?.split("</table>")[0] ?? "";
    return [...table.matchAll(/<tr><td class="num">(\d+)<\/td>/g)].map((m) => Number(m[1]));
  };
  const first = await (await f.app.request("/dashboard/apps/busy", { headers: { cookie } })).text();
  expect(versionsOf(first)).toEqual(Array.from({ length: 20 }, (_, i) => DEPLOYS - i));
  const next = /href="(\/dashboard\/apps\/busy\?cursor=[^"]+)" rel="next"/.exec(first)?.[1];
  expect(next).toBeDefined();
  const second = await (
    await f.app.request((next as string).replaceAll("&amp;", "&"), { headers: { cookie } })
  ).text();
  expect(versionsOf(second)).toEqual([5, 4, 3, 2, 1]);
  expect(second).toContain("First page");
  expect(second).toContain("Recent runs");
});
