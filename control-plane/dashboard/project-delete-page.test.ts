// "Delete the project…" on the API keys page (owners), in-process over a real libSQL file: asked
// on a confirmation page of its own that names the project, then told it was deleted, the pages
// showing another project; a project with apps is not offered the button; a member is refused in
// the API's words; a form about another project than the pages show deletes nothing.
import { afterAll, beforeAll, expect, it } from "vitest";
import { bundleFiles } from "../testing/fixture.ts";
import { libsqlFixture } from "../testing/libsql.ts";
import { cookiesOf, dashboardCookie } from "../testing/owner-rows.ts";

let f: Awaited<ReturnType<typeof libsqlFixture>>;

beforeAll(async () => {
  f = await libsqlFixture();
});
afterAll(() => f.cleanup());

const PAGE = "/dashboard/project/delete";
const page = (path: string, cookie: string) => f.app.request(path, { headers: { cookie } });
const post = (cookie: string, project: string) =>
  f.app.request(PAGE, {
    method: "POST",
    headers: {
      cookie,
      origin: "http://localhost",
      "content-type": "application/x-www-form-urlencoded",
    },
    body: new URLSearchParams({ project }).toString(),
  });
/** Posts the form, then opens the page it redirects to with the flash it set. */
async function submit(cookie: string, project: string) {
  const sent = await post(cookie, project);
  expect([sent.status, sent.headers.get("location")]).toEqual([303, PAGE]);
  return (await page(PAGE, `${cookie}; ${cookiesOf(sent)}`)).text();
}
const projectStatus = async (id: string) => (await f.call("GET", `/v2/projects/${id}`)).status;

it("is offered to owners, asked first naming the project, then says it was deleted", async () => {
  const id = await f.addProject();
  const cookie = await dashboardCookie(f, id);
  const keys = await (await page("/dashboard/api-keys", cookie)).text();
  expect(keys).toContain(`<a href="${PAGE}">Delete the project…</a>`);
  const name = ((await (await f.call("GET", `/v2/projects/${id}`)).json()) as { name: string })
    .name;

  const asked = await page(PAGE, cookie);
  expect(asked.status).toBe(200);
  const html = await asked.text();
  expect(html).toContain(`Delete project <strong>${name}</strong> (<code>${id}</code>)?`);
  expect(html).toContain(`<input type="hidden" name="project" value="${id}"/>`);
  expect(html).toContain("Delete project</button>");
  expect(await projectStatus(id)).toBe(200);

  const told = await submit(cookie, id);
  expect(told).toContain(`Deleted project ${name} (${id}). The pages now show`);
  expect(await projectStatus(id)).toBe(404);
  // The project switcher no longer offers it.
  const runs = await (await page("/dashboard/runs", cookie)).text();
  expect(runs).not.toContain(id);
});

it("names the apps left instead of offering the button", async () => {
  const id = await f.addProject();
  const files = bundleFiles({
    "runlet.toml": 'name = "keep"\n',
    "main.mjs": "export const run = () => 1;",
  });
  expect((await f.call("POST", `/v2/projects/${id}/apps`, { body: { files } })).status).toBe(201);
  const html = await (await page(PAGE, await dashboardCookie(f, id))).text();
  expect(html).toContain(
    'still has an app: <a href="/dashboard/apps/keep">keep</a>. Delete it first (Delete the app… on its page, or runlet apps delete NAME), then the project.',
  );
  expect(html).not.toContain("Delete project</button>");
});

it("refuses a member, in the API's words, and deletes nothing", async () => {
  const cookie = await dashboardCookie(f, f.projectId, f.member.token);
  expect(await (await page(PAGE, cookie)).text()).toContain(
    "Only the project&#39;s owners may delete",
  );
  expect(await submit(cookie, f.projectId)).toContain("only the project owner may do this");
  expect(await projectStatus(f.projectId)).toBe(200);
});

it("deletes nothing when the pages show another project than the one asked about", async () => {
  const id = await f.addProject();
  const cookie = await dashboardCookie(f, id);
  const told = await submit(cookie, f.projectId);
  expect(told).toContain("Nothing was deleted: the pages now show another project");
  expect([await projectStatus(id), await projectStatus(f.projectId)]).toEqual([200, 200]);
});
