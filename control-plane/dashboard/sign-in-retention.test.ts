// Sign-in links and dashboard sessions do not pile up: once expired a day, the next sign-in (by a
// one-time link or by a pasted token) removes them (every sign-in used to leave both for good), and
// nothing else.
import { isNotNull } from "drizzle-orm";
import { afterAll, beforeAll, expect, it } from "vitest";
import { signInLinks, tokens } from "../db/schema.ts";
import { libsqlFixture } from "../testing/libsql.ts";

let f: Awaited<ReturnType<typeof libsqlFixture>>;
beforeAll(async () => {
  f = await libsqlFixture();
});
afterAll(() => f.cleanup());

/** Signs in with a one-time link, as `runlet dashboard` does. */
async function signIn(): Promise<void> {
  const res = await f.call("POST", `/v2/projects/${f.projectId}/dashboard-links`);
  expect(res.status).toBe(201);
  const url = new URL(((await res.json()) as { url: string }).url);
  expect((await f.app.request(url.pathname + url.search)).status).toBe(303);
}

/** Signs in by pasting the owner's token on the sign-in page, as a teammate does. */
async function pasteToken(): Promise<void> {
  const res = await f.app.request("/dashboard/login", {
    method: "POST",
    headers: { origin: "http://localhost", "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ token: f.owner.token }).toString(),
  });
  expect(res.status).toBe(303);
  expect(res.headers.getSetCookie().some((c) => c.startsWith("runlet_session="))).toBe(true);
}

const sessions = async () =>
  (await f.db.select().from(tokens).where(isNotNull(tokens.parentId))).length;
const links = async () => (await f.db.select().from(signInLinks)).length;

it("removes links and sessions expired over a day ago at the next sign-in, and keeps the rest", async () => {
  for (let i = 0; i < 3; i++) await signIn();
  expect([await links(), await sessions()]).toEqual([3, 3]);
  // A service account's token expired as long ago is not a session: it stays.
  const account = await f.call("POST", `/v2/projects/${f.projectId}/service-accounts`, {
    body: { name: "ci", expiresAt: new Date(Date.now() + 86_400_000).toISOString() },
  });
  expect(account.status).toBe(201);
  const before = (await f.db.select().from(tokens)).length;
  // Time passes: everything there expired two days ago (they are kept a day once expired).
  const past = Date.now() - 2 * 86_400_000;
  await f.db.update(signInLinks).set({ expiresAt: past });
  await f.db.update(tokens).set({ expiresAt: past }).where(isNotNull(tokens.parentId));

  await signIn(); // removes the three old links and their sessions
  expect([await links(), await sessions()]).toEqual([1, 1]);
  expect((await f.db.select().from(tokens)).length).toBe(before - 3 + 1);
});

it("removes them as well when the next sign-in is a pasted token", async () => {
  for (let i = 0; i < 3; i++) await pasteToken();
  const made = await sessions();
  expect(made).toBeGreaterThanOrEqual(3);
  const past = Date.now() - 2 * 86_400_000;
  await f.db.update(signInLinks).set({ expiresAt: past });
  await f.db.update(tokens).set({ expiresAt: past }).where(isNotNull(tokens.parentId));

  await pasteToken(); // no link is made: the pasted token's sign-in removes them
  expect([await links(), await sessions()]).toEqual([0, 1]);
});
