// The dashboard in-process, over a real libSQL file: revoking a service account or deleting a
// secret from a later page of its list comes back to that page, not to the first (the answer
// used to go to page 1, and the user had to page back to see the next one to act on).
import { afterAll, beforeAll, expect, it } from "vitest";
import { newId } from "../../common/ids.ts";
import { memberships, secrets, serviceAccounts, tokens, users } from "../db/schema.ts";
import { libsqlFixture } from "../testing/libsql.ts";

let f: Awaited<ReturnType<typeof libsqlFixture>>;
let cookie: string;

/** The cookies a response sets, as one Cookie header. */
const cookiesOf = (res: Response) =>
  res.headers
    .getSetCookie()
    .map((c) => c.split(";")[0])
    .filter((c) => !c?.endsWith("="))
    .join("; ");

beforeAll(async () => {
  f = await libsqlFixture();
  // 55 of each: two pages of 50 in every list.
  const at = Date.parse("2026-11-01T00:00:00Z");
  const expiresAt = Date.now() + 86_400_000;
  for (let i = 0; i < 55; i++) {
    const [sa, tok, user] = [newId("sa"), newId("tok"), newId("usr")];
    const name = `${String(i).padStart(2, "0")}`;
    await f.db.batch([
      f.db
        .insert(tokens)
        .values({ id: tok, subject: sa, projectId: f.projectId, createdAt: at, expiresAt }),
      f.db.insert(serviceAccounts).values({
        id: sa,
        projectId: f.projectId,
        name: `sa-${name}`,
        role: "member",
        tokenId: tok,
        createdBy: f.owner.id,
        createdAt: at + i,
        expiresAt,
      }),
      f.db.insert(users).values({ id: user, name: `user-${name}`, createdAt: at }),
      f.db.insert(memberships).values({ projectId: f.projectId, userId: user, role: "member" }),
      f.db.insert(secrets).values({
        projectId: f.projectId,
        name: `S_${name}`,
        sealed: "not read by the list",
        updatedBy: f.owner.id,
        createdAt: at,
        updatedAt: at,
      }),
    ]);
  }
  const link = await f.call("POST", `/v2/projects/${f.projectId}/dashboard-links`);
  const url = new URL(((await link.json()) as { url: string }).url);
  cookie = cookiesOf(await f.app.request(url.pathname + url.search));
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
  expect(back).toContain('<td class="mono">S_54</td>');
  expect(back).not.toContain('<td class="mono">S_52</td>');
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
