// The app page's "Roll back to this version", in-process over a real libSQL file: offered beside
// each earlier version whose files are kept, asked on a confirmation page, then back on the app
// page told what was done, or the API's refusal in its words. (Before, the dashboard listed an
// app's versions and could make none of them live again.) A confirmation gone back to after its
// rollback deploys nothing more.
import { afterAll, beforeAll, expect, it } from "vitest";
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

async function deploy(name: string, answer: string) {
  const files = bundleFiles({
    "runlet.toml": `name = "${name}"\n`,
    "main.mjs": `export const run = () => ${JSON.stringify(answer)};\n`,
  });
  const res = await f.call("POST", `/v2/projects/${f.projectId}/apps`, { body: { files } });
  expect(res.status).toBe(201);
}

const page = (path: string, extra = "") =>
  f.app.request(path, { headers: { cookie: extra ? `${cookie}; ${extra}` : cookie } });
const post = (path: string, origin = "http://localhost", body = "") =>
  f.app.request(path, {
    method: "POST",
    headers: { cookie, origin, "content-type": "application/x-www-form-urlencoded" },
    body,
  });

/** The versions table's row of `version`, from its `<tr>` to its `</tr>`. */
const rowOf = (html: string, version: number) =>
  html.match(
    new RegExp(
      `<tr><td class="num">${version}(?:<div[^>]*>[^<]*</div>)?</td>(?:(?!</tr>).)*</tr>`,
      "s",
    ),
  )?.[0] ?? "";

it("rolls back from the app page behind a confirmation, and says so on the app page", async () => {
  await deploy("svc", "one");
  await deploy("svc", "two");
  const ask = "/dashboard/apps/svc/versions/1/rollback";
  const before = await (await page("/dashboard/apps/svc")).text();
  expect(rowOf(before, 1)).toContain(`href="${ask}"`);
  expect(rowOf(before, 2)).not.toContain("Roll back");
  expect(rowOf(before, 2)).toContain("live");

  const confirm = await page(ask);
  expect(confirm.status).toBe(200);
  const form = await confirm.text();
  expect(form).toContain(`action="${ask}"`);
  expect(form).toContain("deployed as version 3");
  expect(form).toContain('<a href="/dashboard/apps/svc">Keep version 2 live</a>');

  const done = await post(ask);
  expect([done.status, done.headers.get("location")]).toEqual([303, "/dashboard/apps/svc"]);
  const after = await (await page("/dashboard/apps/svc", cookiesOf(done))).text();
  expect(after).toContain(
    "Rolled svc back to version 1&#39;s code as version 3: new calls get it, and a replica of it started first.",
  );
  expect(rowOf(after, 3)).toContain("live");
  expect(rowOf(after, 3)).toContain('<div class="hint">rollback to 1</div>');
  expect(rowOf(after, 2)).toContain('href="/dashboard/apps/svc/versions/2/rollback"');
  // Version 1's files are the live code now: rolling back to it would deploy them again.
  expect(rowOf(after, 1)).toContain("the live code");
  expect(rowOf(after, 1)).not.toContain("Roll back");
  // Said once: a reload does not say it again.
  expect(await (await page("/dashboard/apps/svc")).text()).not.toContain("Rolled svc back");
});

it("says the API's refusal in its words on the app page", async () => {
  await deploy("twice", "one");
  const done = await post("/dashboard/apps/twice/versions/1/rollback");
  expect(done.status).toBe(303);
  const after = await (await page("/dashboard/apps/twice", cookiesOf(done))).text();
  expect(after).toContain(
    "Not rolled back to version 1: version 1 of &#39;twice&#39; is already live: nothing was deployed",
  );
});

it("deploys nothing again when the confirmation is gone back to and sent once more", async () => {
  // Back from the app page after a rollback showed the same confirmation, and its button
  // deployed the same code as yet another version.
  await deploy("back", "one");
  await deploy("back", "two");
  const ask = "/dashboard/apps/back/versions/1/rollback";
  const form = await (await page(ask)).text();
  const live = form.match(/name="live" value="(\d+)"/)?.[1];
  expect(live).toBe("2");
  const done = await post(ask, undefined, `live=${live}`);
  expect(done.status).toBe(303);
  const version = async () =>
    (
      (await (await f.call("GET", `/v2/projects/${f.projectId}/apps/back`)).json()) as {
        version: number;
      }
    ).version;
  expect(await version()).toBe(3);

  const again = await (await page(ask)).text();
  expect(again).toContain("Version 1&#39;s code is live already, as version 3");
  expect(again).not.toContain(`action="${ask}"`);
  const resent = await post(ask, undefined, `live=${live}`);
  expect(resent.status).toBe(303);
  const after = await (await page("/dashboard/apps/back", cookiesOf(resent))).text();
  expect(after).toContain(
    "Not rolled back to version 1: back&#39;s live version is 3 now, not 2 as when the confirmation was shown: nothing was deployed.",
  );
  expect(await version()).toBe(3);
});

it("offers no rollback to a version whose files are no longer kept", async () => {
  for (let i = 1; i <= 12; i++) await deploy("often", `v${i}`);
  const html = await (await page("/dashboard/apps/often")).text();
  expect(rowOf(html, 3)).toContain("Roll back to this version");
  expect(rowOf(html, 2)).not.toContain("Roll back");
  expect(rowOf(html, 1)).not.toContain("Roll back");
  const confirm = await (await page("/dashboard/apps/often/versions/2/rollback")).text();
  expect(confirm).toContain("only the 10 newest versions keep their files");
  expect(confirm).not.toContain(`action="/dashboard/apps/often/versions/2/rollback"`);
});

it("answers 404 for a version the app never had, as the other pages' no such things are", async () => {
  await deploy("short", "v1");
  const res = await page("/dashboard/apps/short/versions/99/rollback");
  expect(res.status).toBe(404);
  const html = await res.text();
  expect(html).toContain("it has no such version");
  expect(html).not.toContain(`action="/dashboard/apps/short/versions/99/rollback"`);
});

it("refuses a rollback posted from another origin", async () => {
  const res = await post("/dashboard/apps/svc/versions/2/rollback", "https://evil.example");
  expect(res.status).toBe(403);
  const listed = await f.call("GET", `/v2/projects/${f.projectId}/apps/svc`);
  expect(((await listed.json()) as { version: number }).version).toBe(3);
});
