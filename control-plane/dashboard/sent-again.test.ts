// The API keys page's form, sent again, in-process over a real libSQL file: a reload of the page
// that showed a new token, or a double click, made a second service account (a token nobody had
// seen, live for its whole expiry) before; now it makes none and says which one it had made. A new
// form of the same name is refused while that one is active. (The join-tokens page's:
// host-tokens-page.test.ts.)
import { afterAll, beforeAll, expect, it } from "vitest";
import { serviceAccounts } from "../db/schema.ts";
import { libsqlFixture } from "../testing/libsql.ts";
import { cookiesOf, dashboardCookie } from "../testing/owner-rows.ts";

let f: Awaited<ReturnType<typeof libsqlFixture>>;
let cookie: string;

beforeAll(async () => {
  f = await libsqlFixture();
  cookie = await dashboardCookie(f, f.projectId);
});
afterAll(() => f.cleanup());

const PATH = "/dashboard/api-keys";
const expires = new Date(Date.now() + 7 * 86_400_000).toISOString().slice(0, 10);
const page = async (extra = "") =>
  (
    await f.app.request(PATH, { headers: { cookie: extra ? `${cookie}; ${extra}` : cookie } })
  ).text();
const sinceOf = (html: string) => html.match(/name="since" value="(\d+)"/)?.[1] ?? "";
const post = (form: Record<string, string>) =>
  f.app.request(PATH, {
    method: "POST",
    headers: {
      cookie,
      origin: "http://localhost",
      "content-type": "application/x-www-form-urlencoded",
    },
    body: new URLSearchParams({ expires, role: "member", ...form }).toString(),
  });
const named = async (name: string) =>
  (await f.db.select().from(serviceAccounts)).filter((a) => a.name === name);

it("makes no second account of a form sent again, and says which it made", async () => {
  const sent = { name: "ci-reload", since: sinceOf(await page()) };
  const first = await post(sent);
  expect(first.status).toBe(200);
  expect(await first.text()).toContain('id="new-token"');

  const again = await post(sent);
  expect([again.status, again.headers.get("location")]).toEqual([303, PATH]);
  const [made] = await named("ci-reload");
  const said = await page(cookiesOf(again));
  expect(said).toContain(
    `No second service account was made: you made <strong>ci-reload</strong> (<code>${made?.id}</code>)`,
  );
  expect(said).not.toContain('id="new-token"');
  expect(await named("ci-reload")).toHaveLength(1);

  // A new form of the same name is refused while that account is active, saying which it is:
  // two of one name could not be told apart in the list or the audit log.
  const taken = await post({ name: "ci-reload", since: sinceOf(said) });
  expect(taken.status).toBe(303);
  expect(await page(cookiesOf(taken))).toContain(
    `a service account named &#39;ci-reload&#39; is active in this project already (${made?.id}): revoke it first (runlet tokens revoke ${made?.id}, or the dashboard&#39;s API keys page), or pick another name`,
  );
  expect(await named("ci-reload")).toHaveLength(1);
});

it("makes one account of a form sent twice at once (a double click)", async () => {
  const sent = { name: "ci-double", since: sinceOf(await page()) };
  const answers = await Promise.all([post(sent), post(sent)]);
  expect(answers.map((a) => a.status).sort()).toEqual([200, 303]);
  expect(await named("ci-double")).toHaveLength(1);
});
