// "Delete the app…" on an app's page, in-process over a real libSQL file: asked on a confirmation
// page of its own that says what goes (as `runlet apps delete` does on a terminal), then deleted
// through the API (audited, source: dashboard) and told so on the apps list. (Before, the
// dashboard could not delete an app: the CLI alone could.) A session whose role may not delete
// one is not offered the button, and its forged POST is refused in the API's words; the
// confirmation sent again after Back deletes nothing twice, nor a new app of the name.
import { and, eq } from "drizzle-orm";
import { afterAll, beforeAll, expect, it } from "vitest";
import { auditLog, serviceAccounts } from "../db/schema.ts";
import { bundleFiles } from "../testing/fixture.ts";
import { libsqlFixture } from "../testing/libsql.ts";
import { cookiesOf, dashboardCookie } from "../testing/owner-rows.ts";

let f: Awaited<ReturnType<typeof libsqlFixture>>;
let cookie: string;

beforeAll(async () => {
  f = await libsqlFixture();
  cookie = await dashboardCookie(f, f.projectId, f.member.token);
});
afterAll(() => f.cleanup());

async function deploy(name: string) {
  const files = bundleFiles({
    "runlet.toml": `name = "${name}"\n`,
    "main.mjs": "export const run = () => 1;\n",
  });
  const res = await f.call("POST", `/v2/projects/${f.projectId}/apps`, { body: { files } });
  expect(res.status).toBe(201);
}
const appApi = (name: string) => `/v2/projects/${f.projectId}/apps/${name}`;
const appOf = async (name: string) => {
  const res = await f.call("GET", appApi(name));
  return res.ok ? ((await res.json()) as { id: string; version: number }) : res.status;
};
const page = (path: string, as = cookie) => f.app.request(path, { headers: { cookie: as } });
const post = (path: string, body: Record<string, string>, as = cookie) =>
  f.app.request(path, {
    method: "POST",
    headers: {
      cookie: as,
      origin: "http://localhost",
      "content-type": "application/x-www-form-urlencoded",
    },
    body: new URLSearchParams(body).toString(),
  });
/** The apps.delete entries of `name`, oldest first. */
const deletions = async (name: string) =>
  (
    await f.db
      .select()
      .from(auditLog)
      .where(and(eq(auditLog.action, "apps.delete"), eq(auditLog.targetId, name)))
  ).sort((a, b) => a.seq - b.seq);

it("asks on its own page saying what goes, deletes through the API (audited), says so on the list", async () => {
  await deploy("doomed");
  await deploy("doomed");
  const ask = "/dashboard/apps/doomed/delete";
  expect(await (await page("/dashboard/apps/doomed")).text()).toContain(
    `<a href="${ask}">Delete the app…</a>`,
  );
  const confirm = await page(ask);
  expect(confirm.status).toBe(200);
  const form = await confirm.text();
  expect(form).toContain(`action="${ask}"`);
  expect(form).toContain("Delete app <strong>doomed</strong> (v2 live, 2 versions, with their");
  expect(form).toContain("Its replicas stop and calls of it are 404 within 10 s.");
  expect(form).toContain("0 queued, which fail as they come to a host; 0 running");
  expect(form).toContain("a later deploy of the name starts at version 1");
  expect(form).toContain('<a href="/dashboard/apps/doomed">Keep it</a>');
  expect(await deletions("doomed")).toEqual([]);

  const app = await appOf("doomed");
  const done = await post(ask, { app: typeof app === "object" ? app.id : "" });
  expect([done.status, done.headers.get("location")]).toEqual([303, "/dashboard/apps"]);
  const list = await (await page("/dashboard/apps", `${cookie}; ${cookiesOf(done)}`)).text();
  expect(list).toContain("Deleted doomed: its replicas stop, and calls of it are 404 within 10 s.");
  expect(await appOf("doomed")).toBe(404);
  const [entry, ...more] = await deletions("doomed");
  expect(more).toEqual([]);
  expect(entry).toMatchObject({ outcome: "success", actorId: f.member.id });
  expect(entry?.metadata).toMatchObject({ source: "dashboard", version: 2 });
  expect(entry?.requestId).toBe(done.headers.get("x-request-id"));
  // Said once: a reload does not say it again.
  expect(await (await page("/dashboard/apps")).text()).not.toContain("Deleted doomed");
});

it("sent again after Back deletes nothing twice, nor a new app of the name, and says the app is gone", async () => {
  await deploy("back");
  const ask = "/dashboard/apps/back/delete";
  const id = (await (await page(ask)).text()).match(/name="app" value="([^"]+)"/)?.[1];
  expect(id).toMatch(/^app_/);
  expect((await post(ask, { app: id as string })).status).toBe(303);

  const again = await post(ask, { app: id as string });
  expect([again.status, again.headers.get("location")]).toEqual([303, "/dashboard/apps"]);
  expect(await (await page("/dashboard/apps", `${cookie}; ${cookiesOf(again)}`)).text()).toContain(
    "Nothing was deleted: back is gone already (deleted since the confirmation was shown).",
  );
  expect((await deletions("back")).map((e) => e.outcome)).toEqual(["success"]);

  // Deployed again meanwhile (a teammate, or `runlet deploy`): the old form keeps the new app.
  await deploy("back");
  const third = await post(ask, { app: id as string });
  expect(await (await page("/dashboard/apps", `${cookie}; ${cookiesOf(third)}`)).text()).toContain(
    "Nothing was deleted: back was deployed again since the confirmation was shown, as a new app (version 1), which is kept.",
  );
  expect(await appOf("back")).toMatchObject({ version: 1 });
  expect((await deletions("back")).map((e) => e.outcome)).toEqual(["success"]);
});

it("offers no button to a role that may not delete, and refuses its forged POST in the API's words", async () => {
  await deploy("kept");
  const made = await f.call("POST", `/v2/projects/${f.projectId}/service-accounts`, {
    body: {
      name: "ci",
      role: "member",
      expiresAt: new Date(Date.now() + 86_400_000).toISOString(),
    },
  });
  const account = (await made.json()) as { id: string; token: string };
  const theirs = await dashboardCookie(f, f.projectId, account.token);
  // A role that may not delete apps (caller: no route offers the change; the page must not
  // assume every session may).
  await f.db
    .update(serviceAccounts)
    .set({ role: "caller" })
    .where(eq(serviceAccounts.id, account.id));
  const appPage = await page("/dashboard/apps/kept", theirs);
  expect(appPage.status).toBe(200);
  expect(await appPage.text()).not.toContain("Delete the app…");
  const ask = "/dashboard/apps/kept/delete";
  const asked = await page(ask, theirs);
  expect(asked.status).toBe(403);
  const refusal = await asked.text();
  expect(refusal).toContain("this service account&#39;s role is caller");
  expect(refusal).not.toContain(`action="${ask}"`);

  const forged = await post(ask, { app: "" }, theirs);
  expect([forged.status, forged.headers.get("location")]).toEqual([303, ask]);
  const told = await (await page(ask, `${theirs}; ${cookiesOf(forged)}`)).text();
  expect(told).toContain("this service account&#39;s role is caller");
  expect(await appOf("kept")).toMatchObject({ version: 1 });
  expect((await deletions("kept")).map((e) => e.outcome)).toEqual(["failure"]);
});
