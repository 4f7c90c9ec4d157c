// The audit log page with filter values the API would not take, in-process over a real libSQL
// file: each is named with what it takes and the value likely meant, and left out; the good ones
// beside them stay selected in the form and still filter the list.
import { afterAll, beforeAll, expect, it } from "vitest";
import { libsqlFixture } from "../testing/libsql.ts";
import { dashboardCookie } from "../testing/owner-rows.ts";

let f: Awaited<ReturnType<typeof libsqlFixture>>;
let cookie: string;

beforeAll(async () => {
  f = await libsqlFixture();
  cookie = await dashboardCookie(f, f.projectId);
});
afterAll(() => f.cleanup());

const page = async (query: string) =>
  (await f.app.request(`/dashboard/audit-log?${query}`, { headers: { cookie } })).text();

it("names each bad value, with what it takes and the one likely meant", async () => {
  const html = await page("from=yesterday&action=deploy&outcome=fail");
  // Only the API's first problem was said, about from; action and outcome went without a word.
  expect(html).toContain("from &#39;yesterday&#39; is not a time: UTC as the field gives it");
  expect(html).toContain("action &#39;deploy&#39; is not one of projects.create, projects.update,");
  expect(html).toContain("(did you mean &#39;apps.deploy&#39;?)");
  expect(html).toContain(
    "outcome &#39;fail&#39; is not success or failure (did you mean &#39;failure&#39;?)",
  );
  expect(html).toContain("those filters are left out.");
  // Near no time: nothing is suggested for it.
  expect(html).not.toMatch(/yesterday&#39; is not a time[^;]*did you mean/);
  // The list is still shown, unfiltered.
  expect(html).toContain('aria-label="Audit log entries"');
});

it("suggests the time a near one meant, in UTC as the field takes it", async () => {
  // A '+' of an offset that the query string read as a space; a space for the T.
  const html = await page("from=2026-11-27T05:16:00%2001:00&to=2026-11-27%2005:20");
  expect(html).toContain(
    "from &#39;2026-11-27T05:16:00 01:00&#39; is not a time: UTC as the field gives it, like 2026-11-22T09:30, or RFC 3339, like 2026-11-22T09:30:00Z (did you mean &#39;2026-11-27T04:16&#39;?)",
  );
  expect(html).toContain("(did you mean &#39;2026-11-27T05:20&#39;?)");
  expect(html).toContain('aria-label="Audit log entries"');
});

it("keeps a good value selected beside a bad one, and filters by it", async () => {
  const html = await page("action=secrets.write&outcome=fail&from=2026-11-27T05:16");
  expect(html).toContain('<option value="secrets.write" selected="">secrets.write</option>');
  expect(html).toContain('name="from" type="datetime-local" value="2026-11-27T05:16"');
  expect(html).toContain("outcome &#39;fail&#39; is not success or failure");
  expect(html).toContain("that filter is left out.");
  expect(html).not.toContain("from &#39;");
  // The export and the actor links carry the good filters, not the one left out.
  expect(html).toContain("action=secrets.write&amp;from=2026-11-27T05%3A16%3A00Z&amp;format=csv");
  expect(html).not.toContain("outcome=fail");
});

it("shows its times in UTC, as its From and To take them, and a To to the second takes in that second", async () => {
  const html = await page("to=2026-11-27T05:16:06&from=2026-11-27T05:10");
  expect(html).toContain('<th scope="col">Time (UTC)</th>');
  expect(html).toContain('<label for="f-from">From (UTC)</label>');
  // The rows are shown to the second: an entry at 05:16:06.412 is shown as 05:16:06 and was
  // left out by To 05:16:06, the API's 05:16:06.000.
  expect(html).toContain("from=2026-11-27T05%3A10%3A00Z&amp;to=2026-11-27T05%3A16%3A06.999Z");
  const minute = await page("to=2026-11-27T05:16");
  expect(minute).toContain("to=2026-11-27T05%3A16%3A00.999Z&amp;format=csv");
  // With a fraction, or as RFC 3339, it is the API's, to the millisecond.
  expect(await page("to=2026-11-27T05:16:06.5")).toContain("to=2026-11-27T05%3A16%3A06.5Z&amp;");
  expect(await page("to=2026-11-27T05:16:06Z")).toContain("to=2026-11-27T05%3A16%3A06Z&amp;");
  // Each row's time is marked for the script to leave in UTC (elsewhere: the reader's zone).
  const written = await f.app.request(`/v2/projects/${f.projectId}/secrets/UTC_ROW`, {
    method: "PUT",
    headers: { authorization: `Bearer ${f.owner.token}`, "content-type": "application/json" },
    body: JSON.stringify({ value: "v" }),
  });
  expect(written.status).toBe(204);
  expect(await page("")).toMatch(
    /<td><time datetime="[^"]+Z" title="[^"]+" data-utc="">[^<]+ UTC<\/time>/,
  );
});

it("says a window that ends before it starts, leaves it out, and lists the rest", async () => {
  const html = await page("from=2026-11-27T20:00&to=2026-11-27T19:00:30&outcome=success");
  // It was the API's 400 alone, "from must not be later than to": no list, no export.
  expect(html).toContain(
    "from &#39;2026-11-27T20:00&#39; is later than to &#39;2026-11-27T19:00:30&#39;: those filters are left out.",
  );
  expect(html).toContain('aria-label="Audit log entries"');
  expect(html).toMatch(/name="from" type="datetime-local" autocomplete/);
  expect(html).toContain("outcome=success&amp;format=csv");
  // Nor is the slip a refused read in the audit log.
  const refused = await f.app.request(
    `/v2/projects/${f.projectId}/audit-log?action=audit_log.read&outcome=failure`,
    { headers: { authorization: `Bearer ${f.owner.token}` } },
  );
  expect(((await refused.json()) as { logs: unknown[] }).logs).toEqual([]);
});
