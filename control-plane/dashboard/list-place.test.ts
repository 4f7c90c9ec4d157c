// The dashboard in-process, over a real libSQL file: revoking a service account or deleting a
// secret from a later page of its list comes back to that page, not to the first (the answer
// used to go to page 1, and the user had to page back to see the next one to act on).
import { afterAll, beforeAll, expect, it } from "vitest";
import { libsqlFixture } from "../testing/libsql.ts";
import { addOwnerRows, cookiesOf, dashboardCookie } from "../testing/owner-rows.ts";

let f: Awaited<ReturnType<typeof libsqlFixture>>;
let cookie: string;

beforeAll(async () => {
  f = await libsqlFixture();
  // 55 of each: two pages of 50 in every list.
  await addOwnerRows(f, f.projectId, { n: 55, at: Date.parse("2026-11-01T00:00:00Z") });
  cookie = await dashboardCookie(f, f.projectId);
});
afterAll(() => f.cleanup());

const page = async (path: string, extra = "") => {
  const res = await f.app.request(path, { headers: { cookie: `${cookie}${extra}` } });
  expect(res.status).toBe(200);
  return res.text();
};
const post = (path: string) =>
  f.app.request(path, {
    method: "POST",
    headers: {
      cookie,
      origin: "http://localhost",
      "content-type": "application/x-www-form-urlencoded",
    },
    body: "",
  });

/** The address of the first link or form on `html` that matches, as the browser reads it. */
const address = (html: string, pattern: RegExp) => {
  const found = html.match(pattern)?.[1];
  expect(found, String(pattern)).toBeDefined();
  return (found as string).replaceAll("&amp;", "&");
};
const nextPage = (html: string, label: string) =>
  address(html, new RegExp(`aria-label="${label}"><a href="([^"]+)" rel="next">`));

it("deletes a secret from page 2 and comes back to page 2", async () => {
  const second = nextPage(await page("/dashboard/secrets"), "Pages");
  expect(second).toMatch(/^\/dashboard\/secrets\?cursor=/);
  const listed = await page(second);
  const ask = address(listed, /href="(\/dashboard\/secrets\/S_52\/delete[^"]*)"/);
  const confirm = await page(ask);
  expect(address(confirm, /<a href="([^"]+)">Keep it<\/a>/)).toBe(second);
  const done = await post(address(confirm, /action="(\/dashboard\/secrets\/S_52\/[^"]+)"/));
  expect(done.status).toBe(303);
  expect(done.headers.get("location")).toBe(second);
  const back = await page(second, `; ${cookiesOf(done)}`);
  expect(back).toContain("S_52 is deleted.");
  expect(back).toContain('<td class="mono name">S_54</td>');
  expect(back).not.toContain('<td class="mono name">S_52</td>');
});

it("revokes a service account from page 2 of both lists and comes back to the same pages", async () => {
  const accounts = nextPage(await page("/dashboard/api-keys"), "Pages of service accounts");
  const both = nextPage(await page(accounts), "Pages of users");
  expect(both).toMatch(/^\/dashboard\/api-keys\?cursor=[^&]+&users=/);
  const listed = await page(both);
  const ask = address(listed, /href="([^"]+)" aria-label="Revoke sa-02"/);
  const confirm = await page(ask);
  expect(address(confirm, /<a href="([^"]+)">Keep it<\/a>/)).toBe(both);
  const done = await post(address(confirm, /action="(\/dashboard\/api-keys\/[^"]+\/revoke[^"]*)"/));
  expect(done.status).toBe(303);
  expect(done.headers.get("location")).toBe(both);
  const back = await page(both, `; ${cookiesOf(done)}`);
  expect(back).toContain("sa-02 is revoked");
  // The same rows of both lists as before the revoke: the same pages.
  const names = (html: string) => html.match(/(sa|user)-\d\d/g)?.filter((n) => n !== "sa-02");
  expect(names(back)).toEqual(names(listed));
  expect(names(back)).toContain("sa-00");
});

it("creates a service account from page 2: its token on the answer itself, above the same pages, in no cookie", async () => {
  const second = nextPage(await page("/dashboard/api-keys"), "Pages of service accounts");
  const listed = await page(second);
  const action = address(listed, /<form method="post" action="(\/dashboard\/api-keys[^"]*)"/);
  expect(action).toBe(second);
  const res = await f.app.request(action, {
    method: "POST",
    headers: {
      cookie,
      origin: "http://localhost",
      "content-type": "application/x-www-form-urlencoded",
    },
    body: new URLSearchParams({
      name: "ci-new",
      expires: new Date(Date.now() + 30 * 86_400_000).toISOString().slice(0, 10),
      role: "member",
    }).toString(),
  });
  // Shown on this answer (it was a redirect, the token in a flash cookie until the next page).
  expect(res.status).toBe(200);
  const html = await res.text();
  const token = html.match(/<code id="new-token">([^<]+)<\/code>/)?.[1] ?? "";
  expect(token).toMatch(/^ey/);
  expect(res.headers.get("set-cookie") ?? "").not.toContain(token.slice(0, 40));
  expect(html).toContain("data-shown-once");
  // The rows of the page it was made from, as before.
  const names = (page: string) => page.match(/sa-\d\d/g);
  expect(names(html)).toEqual(names(listed));
  // Read again, the page shows no token.
  expect(await page(second)).not.toContain(token);
});
