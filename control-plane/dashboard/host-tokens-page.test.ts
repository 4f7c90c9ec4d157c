// The dashboard's join-tokens page in-process, over a real libSQL file: an operator reaches it
// from the hosts page, makes a token shown once (on the answer to the form, never in a cookie or
// an address) with the command a new machine joins with, and revokes one behind a confirmation;
// a refused name shows the API's words; anyone else has no link and gets the API's 403. (Before,
// join tokens were made and revoked with `runlet hosts token|revoke` only.)
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hosts, hostTokens, users } from "../db/schema.ts";
import { createHostToken } from "../hosts/tokens.ts";
import { libsqlFixture } from "../testing/libsql.ts";
import { cookiesOf, dashboardCookie } from "../testing/owner-rows.ts";

let f: Awaited<ReturnType<typeof libsqlFixture>>;

beforeAll(async () => {
  f = await libsqlFixture();
  await f.db.update(users).set({ operator: true }).where(eq(users.id, f.owner.id));
});
afterAll(() => f.cleanup());

const TOKENS = "/dashboard/hosts/tokens";

const signIn = (token: string, projectId: string) => dashboardCookie(f, projectId, token);
const operator = () => signIn(f.owner.token, f.projectId);

const page = (path: string, cookie: string) => f.app.request(path, { headers: { cookie } });
const post = (path: string, cookie: string, form: Record<string, string> = {}, origin = "") =>
  f.app.request(path, {
    method: "POST",
    headers: {
      cookie,
      origin: origin || "http://localhost",
      "content-type": "application/x-www-form-urlencoded",
    },
    body: new URLSearchParams(form).toString(),
  });
/** The page a form's 303 leads to, with the notice it left. */
const landing = async (res: Response, cookie: string) => {
  expect([res.status, res.headers.get("location")]).toEqual([303, TOKENS]);
  return (await page(TOKENS, `${cookie}; ${cookiesOf(res)}`)).text();
};

/** The create form's hidden field: when the page was made. */
const sinceOf = (html: string) => html.match(/name="since" value="(\d+)"/)?.[1] ?? "";
/** The token's row on the list, from its `<tr>` to its `</tr>`. */
const rowOf = (html: string, id: string) =>
  html.match(new RegExp(`<tr>(?:(?!</tr>).)*${id}(?:(?!</tr>).)*</tr>`, "s"))?.[0] ?? "";
const tokensNamed = async (name: string) =>
  (await f.db.select().from(hostTokens)).filter((t) => t.name === name);
/** Two live hosts may not share a name. */
const register = (token: string, address: string, name = "rack") =>
  f.call("POST", "/internal/hosts", {
    token,
    body: { name, address, slots: 4, memoryMb: 1024 },
  });

describe("the join-tokens page", () => {
  it("is empty at first, and says how to begin", async () => {
    const html = await (await page(TOKENS, await operator())).text();
    expect(html).toContain("No join token yet. Make one above, then run the command it shows");
  });

  it("makes a token shown once, with the command a new machine joins with; the token works", async () => {
    const cookie = await operator();
    const hosts = await (await page("/dashboard/hosts", cookie)).text();
    expect(hosts).toContain(`<a href="${TOKENS}">Join tokens</a>`);
    const form = await (await page(TOKENS, cookie)).text();
    expect(form).toContain(`<form method="post" action="${TOKENS}"`);
    const sent = { name: "rack-7", since: sinceOf(form) };

    const res = await post(TOKENS, cookie, sent);
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(res.headers.get("location")).toBeNull();
    const html = await res.text();
    const token = html.match(/<code id="new-token">(rlh_[^<]+)<\/code>/)?.[1] ?? "";
    expect(token).toMatch(/^rlh_/);
    expect(res.headers.get("set-cookie") ?? "").not.toContain(token);
    expect(html).toContain("Copy it now: it is shown this once.");
    expect(html).toContain(
      `<code id="join-command">RUNLET_HOST_TOKEN=${token} npx runlet host --control-plane http://localhost --address http://&lt;its address&gt;:8790</code>`,
    );
    const [made] = await tokensNamed("rack-7");
    expect(rowOf(html, made?.id as string)).toContain("Olive Owner (you)");

    // It is a host token: a host registers with it; the API lists it, never the token.
    expect((await register(token, "http://10.8.0.7:8790", "rack-7")).status).toBe(200);
    const listed = await (await f.call("GET", "/v2/hosts/tokens")).text();
    expect(listed).toContain("rack-7");
    expect(listed).not.toContain(token);

    // The list again (a reload that asks for the page): the token is not there.
    const again = await (await page(TOKENS, cookie)).text();
    expect(rowOf(again, made?.id as string)).toContain('<span class="status status-active">');
    expect(again).not.toContain(token);
    // The same form sent again (a reload of the answer): no second token, and it says why.
    const twice = await landing(await post(TOKENS, cookie, sent), cookie);
    expect(twice).toContain("No second token was made: you made <strong>rack-7</strong>");
    expect(twice).not.toContain(token);
    expect(await tokensNamed("rack-7")).toHaveLength(1);
    // A new form of the same name is refused while that token is live, naming it; none is made.
    const next = await post(TOKENS, cookie, { name: "rack-7", since: sinceOf(again) });
    expect(await landing(next, cookie)).toContain(
      `a host token named &#39;rack-7&#39; is live already (${made?.id}): revoke it first (runlet hosts revoke ${made?.id}, or the dashboard&#39;s Join tokens tab, under Hosts), or pick another name`,
    );
    expect(await tokensNamed("rack-7")).toHaveLength(1);
  });

  it("makes one token of a form sent twice at once (a double click): the other answer says so", async () => {
    const cookie = await operator();
    const form = await (await page(TOKENS, cookie)).text();
    const sent = { name: "rack-dbl", since: sinceOf(form) };
    const answers = await Promise.all([post(TOKENS, cookie, sent), post(TOKENS, cookie, sent)]);
    expect(answers.map((a) => a.status).sort()).toEqual([200, 303]);
    expect(await tokensNamed("rack-dbl")).toHaveLength(1);
    const other = answers.find((a) => a.status === 303) as Response;
    expect(await landing(other, cookie)).toContain(
      "No second token was made: you made <strong>rack-dbl</strong>",
    );
  });

  it("shows the API's refusal of a name in its words, and keeps what was typed", async () => {
    const cookie = await operator();
    const cases: Array<[string, string]> = [
      ["   ", "name: must not be empty"],
      ["x".repeat(65), "name: must be at most 64 characters"],
      ["bell\u0007", "name: must not contain control characters"],
    ];
    for (const [name, said] of cases) {
      const html = await landing(await post(TOKENS, cookie, { name, since: "1" }), cookie);
      expect(html).toContain(`No join token was made: ${said}.`);
      expect(html).not.toContain('id="new-token"');
    }
    const long = await landing(await post(TOKENS, cookie, { name: "x".repeat(65) }), cookie);
    expect(long).toContain(`value="${"x".repeat(65)}"`);
    expect(await tokensNamed("   ")).toHaveLength(0);
  });

  it("revokes a token after its confirmation: its host is refused at its next heartbeat", async () => {
    const { id, token } = await createHostToken(f.db, { name: "rack-9", createdBy: f.owner.id });
    const reg = (await (await register(token, "http://10.8.0.9:8790")).json()) as {
      hostId: string;
    };
    const cookie = await operator();
    const ask = `${TOKENS}/${id}/revoke`;
    const listed = rowOf(await (await page(TOKENS, cookie)).text(), id);
    expect(listed).toContain(`href="${ask}"`);
    expect(listed).toContain(`<td class="name">rack (up)</td>`); // the hosts that joined with it
    const confirm = await page(ask, cookie);
    expect(confirm.status).toBe(200);
    const form = await confirm.text();
    expect(form).toContain(`action="${ask}"`);
    expect(form).toContain("are refused at their next heartbeat (within seconds), and stop");
    expect(form).toContain("The hosts registered with it: rack (up).");
    expect(form).toContain(`<a href="${TOKENS}">Keep it</a>`);
    expect(form).not.toContain("runlet start</code> runs beside");

    const html = await landing(await post(ask, cookie), cookie);
    expect(html).toContain("rack-9 is revoked: hosts that joined with it are refused");
    const row = rowOf(html, id);
    expect(row).toContain('<span class="status status-revoked">revoked</span> at <time');
    expect(row).not.toContain("Revoke rack-9");
    const beat = await f.call("POST", `/internal/hosts/${reg.hostId}/heartbeat`, {
      token,
      body: { state: "up", busy: 0, queued: 0, apps: [] },
    });
    expect(beat.status).toBe(401);

    expect(await (await page(ask, cookie)).text()).toContain("is revoked already");
    // Sent again all the same (a second tab): the API's refusal, in its words.
    expect(await landing(await post(ask, cookie), cookie)).toContain(
      `rack-9 was not revoked: no host token &#39;${id}&#39; that is not revoked.`,
    );
    const unknown = await page(`${TOKENS}/htk_never/revoke`, cookie);
    expect(unknown.status).toBe(404);
  });

  it("is where removing a host sends an operator to keep it out", async () => {
    const { token } = await createHostToken(f.db, { name: "rack-gone", createdBy: f.owner.id });
    const { hostId } = (await (
      await register(token, "http://10.8.0.10:8790", "rack-10")
    ).json()) as {
      hostId: string;
    };
    await f.db
      .update(hosts)
      .set({ seenAt: Date.now() - 600_000 })
      .where(eq(hosts.id, hostId));
    const ask = await (await page(`/dashboard/hosts/${hostId}/remove`, await operator())).text();
    expect(ask).toContain(`revoke its token (<a href="${TOKENS}">Join tokens</a>, or <code>`);
  });

  it("warns that revoking 'local' stops the hosts of 'runlet start'", async () => {
    const { id } = await createHostToken(f.db, { name: "local", createdBy: f.owner.id });
    const form = await (await page(`${TOKENS}/${id}/revoke`, await operator())).text();
    expect(form).toContain("runlet start</code> runs beside this control plane: revoking it stops");
  });

  it("names who made each token (the API's createdByName), and gives the id of one deleted since", async () => {
    const byMember = await createHostToken(f.db, { name: "by-mel", createdBy: f.member.id });
    const byGone = await createHostToken(f.db, { name: "by-gone", createdBy: "usr_gone" });
    const html = await (await page(TOKENS, await operator())).text();
    expect(rowOf(html, byMember.id)).toContain(`<td class="name">Mel Member</td>`);
    expect(rowOf(html, byGone.id)).toContain('<span class="mono">usr_gone</span>');
  });

  it("is not offered to a member who is not an operator, and refuses them with the API's 403", async () => {
    const { id } = await createHostToken(f.db, { name: "rack-secret", createdBy: f.owner.id });
    const cookie = await signIn(f.member.token, f.projectId);
    const runs = await (await page("/dashboard/runs", cookie)).text();
    expect(runs).not.toContain('href="/dashboard/hosts');
    const hosts = await (await page("/dashboard/hosts", cookie)).text();
    expect(hosts).not.toContain(`href="${TOKENS}"`);
    for (const path of [TOKENS, `${TOKENS}/${id}/revoke`]) {
      const res = await page(path, cookie);
      expect(res.status, path).toBe(403);
      const html = await res.text();
      expect(html).toContain(
        "Join tokens are for this Runlet&#39;s operators: only an operator of this Runlet may see or admit its hosts.",
      );
      expect(html).not.toContain("rack-secret");
      expect(html).not.toContain(`href="${TOKENS}"`);
      expect(html).not.toContain('<form method="post" action="/dashboard/hosts');
    }
    const made = await landing(await post(TOKENS, cookie, { name: "sneaky" }), cookie);
    expect(made).toContain("No join token was made: only an operator of this Runlet");
    expect(await tokensNamed("sneaky")).toHaveLength(0);
    await post(`${TOKENS}/${id}/revoke`, cookie);
    expect((await tokensNamed("rack-secret"))[0]?.revokedAt).toBeNull();
  });

  it("refuses a form posted from another origin, and escapes what a token is called", async () => {
    const cookie = await operator();
    const res = await post(TOKENS, cookie, { name: "planted" }, "http://127.0.0.1:9999");
    expect(res.status).toBe(403);
    expect(await tokensNamed("planted")).toHaveLength(0);
    const { id } = await createHostToken(f.db, { name: "<img src=x>", createdBy: f.owner.id });
    const stays = await post(`${TOKENS}/${id}/revoke`, cookie, {}, "http://127.0.0.1:9999");
    expect(stays.status).toBe(403);
    const html = await (await page(TOKENS, cookie)).text();
    expect(html).toContain("&lt;img src=x&gt;");
    expect(html).not.toContain("<img src=x");
    expect(rowOf(html, id)).toContain("status-active");
  });
});
