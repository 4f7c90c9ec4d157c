// The dashboard's hosts page in-process, over a real libSQL file: an operator sees every host as
// `runlet hosts` shows it and drains, resumes and removes one behind a confirmation, told after
// the redirect what was done or the API's refusal in its words; anyone else has no link to it
// and gets its refusal, 403. (Before, the dashboard had no hosts page: only `runlet hosts`.)
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DOWN_AFTER_MS } from "../../common/protocol/hosts.ts";
import { hosts, users } from "../db/schema.ts";
import { recordHeartbeat } from "../hosts/heartbeat.ts";
import { leaveHost } from "../hosts/leaving.ts";
import { registerHost } from "../hosts/registry.ts";
import { createHostToken, hostTokenId } from "../hosts/tokens.ts";
import { libsqlFixture } from "../testing/libsql.ts";
import { cookiesOf, dashboardCookie } from "../testing/owner-rows.ts";

let f: Awaited<ReturnType<typeof libsqlFixture>>;
let tokenId: string;

beforeAll(async () => {
  f = await libsqlFixture();
  await f.db.update(users).set({ operator: true }).where(eq(users.id, f.owner.id));
  const { token } = await createHostToken(f.db, { name: "racks", createdBy: f.owner.id });
  tokenId = (await hostTokenId(f.db, token)) as string;
});
afterAll(() => f.cleanup());

const join = (name: string, address: string) =>
  registerHost(f.db, tokenId, { name, address, slots: 8, memoryMb: 4096 });

const silence = (id: string) =>
  f.db
    .update(hosts)
    .set({ seenAt: Date.now() - DOWN_AFTER_MS - 180_000 })
    .where(eq(hosts.id, id));

const signIn = (token: string, projectId: string) => dashboardCookie(f, projectId, token);
const operator = () => signIn(f.owner.token, f.projectId);

const page = (path: string, cookie: string) => f.app.request(path, { headers: { cookie } });
const post = (path: string, cookie: string, origin = "http://localhost") =>
  f.app.request(path, {
    method: "POST",
    headers: { cookie, origin, "content-type": "application/x-www-form-urlencoded" },
    body: "",
  });

/** The host's row on the list, from its `<tr>` to its `</tr>`. */
const rowOf = (html: string, id: string) =>
  html.match(new RegExp(`<tr>(?:(?!</tr>).)*${id}(?:(?!</tr>).)*</tr>`, "s"))?.[0] ?? "";

/** Follows the confirmation of `action` on `id` from the list; the list after its redirect. */
async function confirmFromList(cookie: string, id: string, action: string): Promise<string> {
  const list = await (await page("/dashboard/hosts", cookie)).text();
  const ask = `/dashboard/hosts/${id}/${action}`;
  expect(rowOf(list, id)).toContain(`href="${ask}"`);
  const confirm = await page(ask, cookie);
  expect(confirm.status).toBe(200);
  const form = await confirm.text();
  expect(form).toContain(`action="${ask}"`);
  expect(form).toContain('<a href="/dashboard/hosts">Keep it as it is</a>');
  const done = await post(ask, cookie);
  expect([done.status, done.headers.get("location")]).toEqual([303, "/dashboard/hosts"]);
  return (await page("/dashboard/hosts", `${cookie}; ${cookiesOf(done)}`)).text();
}

describe("the hosts page", () => {
  it("is not offered to a user who is not an operator, and refuses them with the API's 403", async () => {
    const id = await join("rack-hidden", "http://10.9.0.9:8790");
    const cookie = await signIn(f.outsider.token, f.outsiderProjectId);
    const runs = await (await page("/dashboard/runs", cookie)).text();
    expect(runs).toContain('href="/dashboard/runs"');
    expect(runs).not.toContain('href="/dashboard/hosts"');
    for (const path of ["/dashboard/hosts", `/dashboard/hosts/${id}/drain`]) {
      const res = await page(path, cookie);
      expect(res.status, path).toBe(403);
      const html = await res.text();
      expect(html).toContain(
        "Hosts are for this Runlet&#39;s operators: only an operator of this Runlet may see or admit its hosts.",
      );
      expect(html).not.toContain("rack-hidden");
      expect(html).not.toContain('<form method="post" action="/dashboard/hosts');
    }
    expect((await post(`/dashboard/hosts/${id}/drain`, cookie)).status).toBe(303);
    const [row] = await f.db.select().from(hosts).where(eq(hosts.id, id));
    expect(row?.state).toBe("up");
    // The operator has the link, marked as the page they are on.
    const mine = await page("/dashboard/hosts", await operator());
    expect(mine.status).toBe(200);
    expect(await mine.text()).toContain('<a href="/dashboard/hosts" aria-current="page">Hosts</a>');
  });

  it("shows each host as `runlet hosts` does: state and when last heard, slots, memory, load, apps, and what may be done to it", async () => {
    const up = await join("rack-up", "http://10.9.0.1:8790");
    await recordHeartbeat(f.db, up, {
      state: "up",
      busy: 3,
      queued: 1,
      apps: [
        { project: f.projectId, app: "hello", version: 1, replicas: 2, ready: 2, busy: 1 },
        { project: f.projectId, app: "quiet", version: 1, replicas: 1, ready: 1, busy: 0 },
      ],
    });
    const down = await join("rack-down", "http://10.9.0.2:8790");
    await recordHeartbeat(f.db, down, {
      state: "up",
      busy: 2,
      queued: 0,
      apps: [{ project: f.projectId, app: "hello", version: 1, replicas: 1, ready: 1, busy: 1 }],
    });
    await silence(down);
    const stopped = await join("rack-stopped", "http://10.9.0.3:8790");
    await leaveHost(f.db, stopped);
    const html = await (await page("/dashboard/hosts", await operator())).text();

    const upRow = rowOf(html, up);
    expect(upRow).toContain(`<td class="name">rack-up<div class="hint mono">${up}</div></td>`);
    expect(upRow).toContain("heard <time");
    expect(upRow).toContain("http://10.9.0.1:8790");
    expect(upRow).toContain('<span class="status status-up">up</span>');
    expect(upRow).toContain('<td class="num">8</td><td class="num">4 GiB</td>');
    expect(upRow).toContain('<td class="num">3/8</td><td class="num">1</td>');
    expect(upRow).toContain("hello×2 quiet×1");
    expect(upRow).toContain('aria-label="Drain rack-up"');
    expect(upRow).not.toContain("Remove");
    expect(upRow).not.toContain("Resume");

    const downRow = rowOf(html, down);
    expect(downRow).toContain('<span class="status status-down">down</span>');
    expect(downRow).toContain(", silent 3 min");
    expect(downRow).toContain('<td class="num">—</td><td class="num">—</td>');
    expect(downRow).toContain("last: hello×1");
    expect(downRow).toContain('aria-label="Drain rack-down"');
    expect(downRow).toContain('aria-label="Remove rack-down"');

    const stoppedRow = rowOf(html, stopped);
    expect(stoppedRow).toContain('<span class="status status-stopped">stopped</span>');
    expect(stoppedRow).toMatch(/ \d+ s ago/);
    expect(stoppedRow).toContain('aria-label="Remove rack-stopped"');
    expect(stoppedRow).not.toContain("Drain");
  });

  it("drains a host and resumes it, each after its confirmation, and says so", async () => {
    const id = await join("rack-drain", "http://10.9.1.1:8790");
    const cookie = await operator();
    const drained = await confirmFromList(cookie, id, "drain");
    expect(drained).toContain(
      "rack-drain is drained: it takes no new work, and its replicas stop as their calls end.",
    );
    expect(rowOf(drained, id)).toContain('<span class="status status-drained">drained</span>');
    expect(rowOf(drained, id)).not.toContain("Drain rack-drain");
    const resumed = await confirmFromList(cookie, id, "resume");
    expect(resumed).toContain("rack-drain is resumed: it takes work again.");
    expect(rowOf(resumed, id)).toContain('<span class="status status-up">up</span>');
    // The notice is shown once: not again on a reload.
    expect(await (await page("/dashboard/hosts", cookie)).text()).not.toContain("is resumed");
  });

  it("removes a host that is down, after its confirmation, and it leaves the list", async () => {
    const id = await join("rack-gone", "http://10.9.2.1:8790");
    await silence(id);
    const after = await confirmFromList(await operator(), id, "remove");
    expect(after).toContain(
      "rack-gone is removed from the list. If it comes back, it joins as a new host.",
    );
    expect(after).not.toContain(id);
  });

  it("shows the API's refusal in its words, and offers no Remove of a host that is up", async () => {
    const id = await join("rack-busy", "http://10.9.3.1:8790");
    const cookie = await operator();
    const confirm = await (await page(`/dashboard/hosts/${id}/remove`, cookie)).text();
    expect(confirm).toContain("rack-busy is up: only a host down or stopped is removed");
    expect(confirm).not.toContain(`action="/dashboard/hosts/${id}/remove"`);
    // Sent all the same (the host came back while the page was open): the API says why not.
    const res = await post(`/dashboard/hosts/${id}/remove`, cookie);
    const html = await (await page("/dashboard/hosts", `${cookie}; ${cookiesOf(res)}`)).text();
    expect(html).toMatch(
      new RegExp(
        `rack-busy was not removed: host &#39;${id}&#39; is up \\(its last heartbeat \\d+ s ago\\): stop it first`,
      ),
    );
    expect(rowOf(html, id)).toContain("status-up");
    const unknown = await page("/dashboard/hosts/hst_never/drain", cookie);
    expect(unknown.status).toBe(404);
    expect(await unknown.text()).toContain("No host &#39;hst_never&#39; in the list");
  });

  it("refuses an action posted from another origin, and escapes what a host calls itself", async () => {
    const id = await join("<img src=x onerror=alert(1)>", "http://10.9.4.1:8790");
    const cookie = await operator();
    expect(
      (await post(`/dashboard/hosts/${id}/drain`, cookie, "http://127.0.0.1:9999")).status,
    ).toBe(403);
    const [row] = await f.db.select().from(hosts).where(eq(hosts.id, id));
    expect(row?.state).toBe("up");
    const html = await (await page("/dashboard/hosts", cookie)).text();
    expect(html).toContain("&lt;img src=x onerror=alert(1)&gt;");
    expect(html).not.toContain("<img src=x");
  });
});
