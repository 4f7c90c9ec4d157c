// The dashboard in a real browser (Debian's Chromium, playwright-core) against a whole local
// Runlet: sign-in through the CLI's one-time link, runs (async marked, new ones appearing without
// a reload), a run's logs and webhook attempts, a failed webhook sent again from its run page,
// an app's async queue on its page and on the Apps list, API keys shown once and revoked, the
// audit log by URL and its CSV export, the hosts page an operator reaches from the navigation,
// CSRF, pages without a session, script errors and axe on every page.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId, timeOfId } from "../common/ids.ts";
import { loadOrCreateInternalToken } from "../control-plane/home.ts";
import { verifyWebhook } from "../webhooks/index.mjs";
import { client, waitOrCancel } from "./apps.ts";
import { launchChromium, newContext, screenshotOnFailure, seriousViolations } from "./browser.ts";
import { cli, json, type Runlet } from "./harness.ts";
import { type Receiver, startReceiver } from "./receiver.ts";
import { sharedRunlet } from "./shared-stack.ts";

const TALKER = {
  "runlet.toml": 'name = "talker"\nruntime = "managed"',
  "main.mjs": `export function run(input) {
  console.log("talking to " + (input.name ?? "nobody"));
  return { said: input.name ?? null };
}
export async function slow() {
  await new Promise((resolve) => setTimeout(resolve, 6000));
  return { slept: true };
}`,
};

/** Runs that hold their replica `ms`, or until cancelled; one replica. */
const QUEUER = {
  "runlet.toml": 'name = "queuer"\nruntime = "managed"\n[scaling]\nmax_replicas = 1',
  "main.mjs": `export async function run(input, ctx) {
  ${waitOrCancel("input?.ms ?? 0")}
  return { held: input?.ms ?? 0 };
}`,
};

let runlet: Runlet;
let receiver: Receiver;
let browser: Browser;
let owner: BrowserContext;
let page: Page;
const errors: string[] = [];
const violations: string[] = [];

const base = () => runlet.local.baseUrl;
const api = (path: string, token = runlet.local.token, init: RequestInit = {}) =>
  fetch(`${base()}/v2/projects/${runlet.local.projectId}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${token}`, ...(init.headers as Record<string, string>) },
  });

async function signInLink(): Promise<string> {
  const out = await cli(["dashboard", "--json"], runlet.env);
  expect(out.code, out.stderr).toBe(0);
  return (JSON.parse(out.stdout) as { url: string }).url;
}

/** Opens `path` on `page`, checks it with axe (light and dark), and returns the page. */
async function visit(path: string, on = page): Promise<Page> {
  await on.goto(`${base()}${path}`);
  await checkWithAxe(on);
  return on;
}

/** axe's serious findings on the page as it is, light and dark. */
async function checkWithAxe(on: Page): Promise<void> {
  for (const colorScheme of ["light", "dark"] as const) {
    await on.emulateMedia({ colorScheme });
    violations.push(...(await seriousViolations(on)));
  }
  await on.emulateMedia({ colorScheme: "light" });
}

beforeAll(async () => {
  runlet = await sharedRunlet("dashboard");
  receiver = await startReceiver();
  await client(runlet).deploy(TALKER);
  browser = await launchChromium();
  owner = await newContext(browser, errors);
  page = await owner.newPage();
}, 150_000);

screenshotOnFailure(() => page);

afterAll(async () => {
  await browser?.close();
  await receiver?.close();
  await runlet?.stop();
});

describe("the dashboard, in a browser", () => {
  it("signs in through the CLI's one-time link, which leaves the address bar and works once", async () => {
    const link = await signInLink();
    await page.goto(link);
    expect(page.url()).toBe(`${base()}/dashboard/runs`);
    await expect(page.locator("h1").textContent()).resolves.toBe("Runs");
    violations.push(...(await seriousViolations(page)));

    const stranger = await newContext(browser, errors);
    const other = await stranger.newPage();
    const again = await other.goto(link);
    expect(again?.status()).toBe(400);
    expect(await other.textContent("h1")).toMatch(/does not work/);
    violations.push(...(await seriousViolations(other)));
    await other.goto(`${base()}/dashboard/runs`);
    expect(new URL(other.url()).pathname).toBe("/dashboard/login");

    // A link to the page one was sent away from lands there.
    await other.goto(`${base()}/dashboard/apps/talker`);
    expect(await other.textContent("main")).toContain(
      "npx runlet dashboard '/dashboard/apps/talker' prints a one-time sign-in link to this page",
    );
    const out = await cli(["dashboard", "/dashboard/apps/talker", "--json"], runlet.env);
    expect(out.code, out.stderr).toBe(0);
    await other.goto((JSON.parse(out.stdout) as { url: string }).url);
    expect(other.url()).toBe(`${base()}/dashboard/apps/talker`);
    await stranger.close();
    const elsewhere = await cli(["dashboard", "/v2/projects", "--json"], runlet.env);
    expect(elsewhere.code).toBe(1);
    expect(JSON.parse(elsewhere.stdout).message).toMatch(/is not a dashboard page/);
  });

  it("shows when a deleted app's run started, from what the runs index kept", async () => {
    await client(runlet).deploy({
      "runlet.toml": 'name = "brief"',
      "main.mjs":
        "export const run = async () => { await new Promise((r) => setTimeout(r, 300)); return 1; };",
    });
    const res = await client(runlet).submit("brief", {});
    expect(res.status).toBe(200);
    const { run_id: runId } = await json(res);
    for (let i = 0; i < 100 && (await client(runlet).index("brief")).length === 0; i++)
      await new Promise((r) => setTimeout(r, 100));
    expect((await api("/apps/brief", runlet.local.token, { method: "DELETE" })).status).toBe(204);

    await visit(`/dashboard/runs/${runId}`);
    const started = page.locator("ol.timeline li", { hasText: "Started" });
    expect(await started.getAttribute("class")).toBeNull(); // "off": never started
    const at = Date.parse((await started.locator("time").getAttribute("datetime")) as string);
    const made = timeOfId(runId) as number;
    expect(at - made).toBeGreaterThanOrEqual(0);
    expect(at - made).toBeLessThan(10_000);
  });

  it("shows a new async run marked async without a reload, and its page its logs and webhook attempt", async () => {
    await visit("/dashboard/runs");
    const submitted = await client(runlet).submit(
      "talker",
      { name: "Ada" },
      `async=true&webhookEndpoint=${encodeURIComponent(`${receiver.url}/hook`)}`,
    );
    expect(submitted.status).toBe(202);
    const { run_id: runId } = await json(submitted);
    const row = page.locator("#runs-rows tr", { hasText: runId });
    await row.waitFor({ timeout: 15_000 });
    await expect(row.locator(".badge-async").textContent()).resolves.toBe("async");
    await receiver.waitFor("/hook", 1);

    await visit(`/dashboard/runs/${runId}`);
    await page.locator("pre.logs", { hasText: "talking to Ada" }).waitFor({ timeout: 15_000 });
    // Its lines' times in the reader's zone as every time of the page is, to the millisecond.
    await expect(page.locator("pre.logs time").first().textContent()).resolves.toMatch(
      /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} \S+$/,
    );
    const attempt = page.getByRole("table", { name: "Delivery attempts" }).locator("tbody tr");
    await attempt.first().waitFor({ timeout: 15_000 });
    await expect(attempt.first().textContent()).resolves.toMatch(/HTTP 200.*delivered/);
  });

  it("wraps a webhook attempt's connection error, its Verdict on screen at 1280 px", async () => {
    // A port nothing listens on: each attempt ends "could not connect to 127.0.0.1:…".
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const hook = encodeURIComponent(`http://127.0.0.1:${port}/gone`);
    const submitted = await client(runlet).submit("talker", {}, `webhookEndpoint=${hook}`);
    const runId = submitted.headers.get("x-request-id") as string;
    for (let i = 0; i < 100 && (await api(`/runs/${runId}`)).status !== 200; i++)
      await new Promise((r) => setTimeout(r, 100));

    const context = await newContext(browser, errors); // 1280 px wide
    const own = await context.newPage();
    await own.goto(await signInLink());
    await visit(`/dashboard/runs/${runId}`, own);
    const table = own.getByRole("table", { name: "Delivery attempts" });
    const first = table.locator("tbody tr", { hasText: "could not connect" }).first();
    await first.waitFor({ timeout: 15_000 });
    const verdict = await first.locator("td").last().boundingBox();
    expect(verdict && verdict.x + verdict.width).toBeLessThanOrEqual(1280);
    const wrap = own.getByRole("region", { name: "Delivery attempts" });
    const [wide, shown] = await wrap.evaluate((w) => [w.scrollWidth, w.clientWidth]);
    expect(wide).toBeLessThanOrEqual(shown as number);
    await context.close();
  });

  it("fits a run's page to a phone's width: its title, a run id, wraps", async () => {
    const submitted = await client(runlet).submit("talker", { name: "phone" });
    const runId = submitted.headers.get("x-request-id") as string;
    for (let i = 0; i < 100 && (await api(`/runs/${runId}`)).status !== 200; i++)
      await new Promise((r) => setTimeout(r, 100));
    const context = await newContext(browser, errors);
    const phone = await context.newPage();
    await phone.setViewportSize({ width: 390, height: 844 });
    await phone.goto(await signInLink());
    await visit(`/dashboard/runs/${runId}`, phone);
    await expect(phone.getByRole("heading", { level: 1 }).textContent()).resolves.toBe(
      `Run ${runId}`,
    );
    const width = await phone.locator("html").evaluate((html) => html.scrollWidth);
    expect(width).toBeLessThanOrEqual(390);
    await context.close();
  });

  it("follows a running run live on its page, and stops fetching the page once it has ended", async () => {
    const submitted = await client(runlet).submit("talker", {}, "async=true", "slow");
    expect(submitted.status).toBe(202);
    const { run_id: runId } = await json(submitted);
    const address = `${base()}/dashboard/runs/${runId}`;
    let fetches = 0;
    const count = (req: { url(): string }) => {
      if (req.url() === address) fetches++;
    };
    page.on("request", count);
    try {
      // Checked with axe once the run has ended: until then the page refreshes itself, and a
      // refresh during axe's look (slow on a loaded machine) ends it.
      await page.goto(address);
      const live = page.locator("#run-live");
      await expect(live.locator(".status").first().textContent()).resolves.toMatch(
        /queued|running/,
      );
      await live.locator(".status", { hasText: "success" }).first().waitFor({ timeout: 15_000 });
      await checkWithAxe(page);
      const seen = fetches;
      await new Promise((resolve) => setTimeout(resolve, 4_500)); // more than two refreshes
      expect(fetches).toBe(seen);
    } finally {
      page.off("request", count);
    }
  });

  it("waits on the page of a run id made moments ago until the runs index has it; an old unknown id is not found", async () => {
    const runId = newId("run");
    await visit(`/dashboard/runs/${runId}`);
    await page.getByText(/was made \d+ s ago/).waitFor();
    // The runs index hears of the run (as from its shard): the page becomes the run's own.
    const reported = await fetch(`${base()}/internal/runs/${runId}`, {
      method: "PUT",
      headers: {
        authorization: `Bearer ${await loadOrCreateInternalToken(runlet.home)}`,
        "content-type": "application/json",
      },
      body: JSON.stringify({
        projectId: runlet.local.projectId,
        app: "talker",
        function: "run",
        async: true,
        status: "queued",
        createdAt: timeOfId(runId),
        finishedAt: null,
        runTimeMs: null,
      }),
    });
    expect(reported.status).toBe(204);
    await page.getByRole("list", { name: "States" }).waitFor({ timeout: 5_000 });
    await expect(page.locator("#run-arrival").count()).resolves.toBe(0);

    await visit(`/dashboard/runs/${newId("run", Date.now() - 60_000)}`);
    await page
      .getByRole("alert")
      .filter({ hasText: /not found/i })
      .waitFor();
    await expect(page.locator("[data-refresh]").count()).resolves.toBe(0);
  });

  it("says which runs filter of an edited address it does not know, and leaves it out", async () => {
    await visit("/dashboard/runs?status=bogus&mode=xyz");
    const alert = page.getByRole("alert");
    await expect(alert.textContent()).resolves.toMatch(
      /status 'bogus' is not one of queued, .*; mode 'xyz' is not async or sync: that filter is left out/,
    );
  });

  it("creates a service account shown once, working on the API, gone after a reload, dead once revoked", async () => {
    await visit("/dashboard/api-keys");
    await page.getByLabel("Name").fill("ci-browser");
    const inAMonth = new Date(Date.now() + 30 * 86_400_000).toISOString().slice(0, 10);
    await page.getByLabel("Expires").fill(inAMonth);
    await page.getByLabel("Role").selectOption("member");
    await page.getByRole("button", { name: "Create" }).click();
    const token = (await page.locator("#new-token").textContent())?.trim() ?? "";
    expect(token).toMatch(/^ey/);
    expect((await api("/apps", token)).status).toBe(200);
    // What a job needs beside it, as runlet tokens create says: the two addresses.
    await expect(page.locator(".secret-once").textContent()).resolves.toContain(
      `A job uses it with RUNLET_BASE_URL=${runlet.local.baseUrl} RUNLET_API_URL=${runlet.local.apiUrl} and RUNLET_TOKEN set to it`,
    );

    await page.reload();
    expect(await page.locator("#new-token").count()).toBe(0);
    expect(await page.content()).not.toContain(token);

    const row = page.locator("tr", { hasText: "ci-browser" });
    // Who made it, by name: the API's createdByName for the signed-in user.
    const listed = await json(await api("/service-accounts"));
    const made = listed.serviceAccounts.find((a: { name: string }) => a.name === "ci-browser");
    expect(made.createdByName).toEqual(expect.any(String));
    await expect(row.textContent()).resolves.toContain(`by ${made.createdByName}`);
    await row.getByRole("link", { name: /Revoke/ }).click();
    violations.push(...(await seriousViolations(page)));
    await page.getByRole("button", { name: "Revoke" }).click();
    await expect(row.textContent()).resolves.toMatch(/revoked/);
    expect((await api("/apps", token)).status).toBe(401);
  });

  it("filters the audit log by its address, and exports the filter as CSV with the API's rows", async () => {
    await visit("/dashboard/audit-log?action=service_accounts.create");
    await expect(page.getByLabel("Action").inputValue()).resolves.toBe("service_accounts.create");
    const actions = await page.locator("tbody tr td:nth-child(2)").allTextContents();
    expect(actions.length).toBeGreaterThan(0);
    expect(new Set(actions)).toEqual(new Set(["service_accounts.create"]));

    let listed = 0;
    let next: string | undefined;
    for (let i = 0; i < 20; i++) {
      const q = `action=service_accounts.create&limit=200${next ? `&nextToken=${next}` : ""}`;
      const body = await json(await api(`/audit-log?${q}`));
      listed += body.logs.length;
      next = body.nextPageToken;
      if (!next) break;
    }
    const [download] = await Promise.all([
      page.waitForEvent("download"),
      page.getByRole("link", { name: "Export CSV" }).click(),
    ]);
    const csv = await streamText(await download.createReadStream());
    const lines = csv.split("\r\n").filter((l) => l !== "");
    expect(lines[0]).toMatch(/^id,timestamp,action,/);
    expect(lines.length - 1).toBe(listed);
  });

  it("refuses a form posted from another origin, though the browser sends the cookie", async () => {
    const evil =
      await serve(`<!doctype html><form id="f" method="post" action="${base()}/dashboard/secrets">
      <input name="name" value="PLANTED"><input name="value" value="x"></form>
      <script>document.getElementById("f").submit()</script>`);
    try {
      const other = await owner.newPage();
      const refused = other.waitForResponse((r) => r.url() === `${base()}/dashboard/secrets`);
      await other.goto(evil.url);
      expect((await refused).status()).toBe(403);
      await other.close();
      expect((await api("/secrets/PLANTED")).status).toBe(404);
    } finally {
      evil.server.close();
    }
  });

  it("shows no data without a session: every page is the sign-in page", async () => {
    const [run] = (await json(await api("/runs?limit=1"))).runs;
    const stranger = await newContext(browser, errors);
    const anon = await stranger.newPage();
    for (const path of [
      "/dashboard/runs",
      "/dashboard/api-keys",
      "/dashboard/audit-log",
      `/dashboard/runs/${run.id}`,
    ]) {
      await anon.goto(`${base()}${path}`);
      expect(new URL(anon.url()).pathname).toBe("/dashboard/login");
      // The address asked for comes back as where to go after signing in (the form's `next`,
      // and the command that prints a link to it); nothing else does.
      expect(await anon.locator("h1").textContent()).toBe("Sign in");
      expect(await anon.locator("table").count()).toBe(0);
      const html = await anon.content();
      for (const data of ["talker", "ci-browser", "service_accounts.create"])
        expect(html).not.toContain(data);
      expect(html.split(run.id).length - 1).toBeLessThanOrEqual(2);
    }
    violations.push(...(await seriousViolations(anon)));
    await stranger.close();
  });

  it("sends a failed webhook again from the run page, signed with the secret typed there", async () => {
    receiver.script("/resend", [500]); // final at once: the first delivery fails
    const hook = encodeURIComponent(`${receiver.url}/resend`);
    const submitted = await client(runlet).submit(
      "talker",
      { name: "Grace" },
      `async=true&webhookEndpoint=${hook}`,
    );
    const { run_id: runId } = await json(submitted);
    const [first] = await receiver.waitFor("/resend", 1);
    // The run page finds a run's app in the runs index, which learns of runs in batches.
    for (let i = 0; i < 100 && (await api(`/runs/${runId}`)).status !== 200; i++)
      await new Promise((r) => setTimeout(r, 100));

    await visit(`/dashboard/runs/${runId}`);
    const secret = "whsec_typed_in_the_page";
    // The form comes once the delivery has failed; the page follows the delivery live.
    await page.getByLabel("Secret").fill(secret, { timeout: 15_000 });
    violations.push(...(await seriousViolations(page)));
    await page.getByRole("button", { name: "Resend" }).click();
    await page.getByText("Delivery 2 is on its way").waitFor(); // back on the run page

    const delivery = (n: number) =>
      page.getByRole("region", { name: `Delivery ${n}`, exact: true });
    await delivery(2).getByText("delivered", { exact: true }).first().waitFor({ timeout: 15_000 });
    await expect(delivery(2).textContent()).resolves.toMatch(/, signed:\s*delivered.*HTTP 200/);
    await expect(delivery(1).textContent()).resolves.toMatch(/not signed:\s*failed.*HTTP 500/);
    violations.push(...(await seriousViolations(page)));
    expect(await page.content()).not.toContain(secret);

    const [, resent] = await receiver.waitFor("/resend", 2);
    expect(resent?.body).toBe(first?.body);
    expect(resent?.headers["x-request-id"]).toBe(runId);
    expect(first?.headers["x-request-id"]).toBe(runId);
    const check = { body: resent?.body ?? "", headers: resent?.headers as Record<string, string> };
    expect(await verifyWebhook({ secret, ...check })).toMatchObject({ ok: true });
  });

  it("offers neither Resend nor Cancel on the page of a run whose app was deleted: the run API refuses both with the app's 404", async () => {
    await client(runlet).deploy({
      "runlet.toml": 'name = "fleeting"',
      "main.mjs": "export const run = () => 1;",
    });
    receiver.script("/fleeting", [500]); // the first delivery fails: Resend is offered
    const hook = encodeURIComponent(`${receiver.url}/fleeting`);
    const submitted = await client(runlet).submit(
      "fleeting",
      {},
      `async=true&webhookEndpoint=${hook}`,
    );
    const { run_id: runId } = await json(submitted);
    await receiver.waitFor("/fleeting", 1);
    for (let i = 0; i < 100 && (await api(`/runs/${runId}`)).status !== 200; i++)
      await new Promise((r) => setTimeout(r, 100));
    await visit(`/dashboard/runs/${runId}`);
    await page.getByRole("button", { name: "Resend" }).waitFor({ timeout: 15_000 });

    expect((await api("/apps/fleeting", runlet.local.token, { method: "DELETE" })).status).toBe(
      204,
    );
    await visit(`/dashboard/runs/${runId}`);
    // The run and its failed delivery are still shown; no button the run API would refuse.
    const attempts = page.getByRole("table", { name: "Delivery attempts" });
    await expect(attempts.textContent()).resolves.toMatch(/HTTP 500/);
    expect(await page.getByRole("button", { name: "Resend" }).count()).toBe(0);
    expect(await page.getByRole("link", { name: "Cancel run" }).count()).toBe(0);
    expect(await page.getByRole("link", { name: "fleeting" }).count()).toBe(0);
    await expect(page.textContent("main")).resolves.toContain(
      "App fleeting was deleted: its runs are kept, but none can be cancelled or have its webhook sent again.",
    );
  });

  it("shows what a custom app's replicas wrote, from the page of its failed request", async () => {
    await client(runlet).deploy({
      "runlet.toml":
        'name = "broken-http"\nruntime = "custom"\n[custom]\nentrypoint = ["node", "s.mjs"]',
      "s.mjs": `import { createServer } from "node:http";
createServer((req, res) => {
  if (req.url === "/health") return res.end("ok");
  console.log("cannot serve " + req.url);
  res.writeHead(500, { "content-type": "application/json" }).end('{"message":"broken"}');
}).listen(Number(process.env.PORT), "127.0.0.1");`,
    });
    const { apiUrl, projectId, token } = runlet.local;
    const called = await fetch(`${apiUrl}/v4/${projectId}/broken-http/items/7`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(called.status).toBe(500);
    const runId = called.headers.get("x-request-id") ?? "";
    for (let i = 0; i < 100 && (await api(`/runs/${runId}`)).status !== 200; i++)
      await new Promise((r) => setTimeout(r, 100));

    // Its request has no run log: the page says where its server's output is, and links there.
    await visit(`/dashboard/runs/${runId}`);
    await expect(page.textContent("main")).resolves.toContain(
      "a custom app's request writes to its replica's output",
    );
    await page.getByRole("link", { name: "Output of broken-http's replicas" }).click();
    expect(new URL(page.url()).pathname).toBe("/dashboard/apps/broken-http/output");
    await checkWithAxe(page);
    await page.locator("pre.logs", { hasText: "cannot serve /items/7" }).waitFor();
    await expect(page.locator("h2").first().textContent()).resolves.toMatch(
      /^Replica \d+ of version 1$/,
    );
    // And from the app's page.
    await visit("/dashboard/apps/broken-http");
    await page.getByRole("link", { name: "Output of its replicas" }).click();
    expect(new URL(page.url()).pathname).toBe("/dashboard/apps/broken-http/output");
    await visit("/dashboard/apps/no-such-app/output");
    await expect(page.textContent("main")).resolves.toContain("app 'no-such-app' is not deployed");
  });

  it("shows an app's async queue (the run store's) apart from the calls waiting at its host", async () => {
    const api = client(runlet);
    await api.deploy(QUEUER);
    const submit = async (ms: number) => {
      const res = await api.submit("queuer", { ms }, "async=true");
      expect(res.status).toBe(202);
      return (await json(res)).run_id as string;
    };
    const held = await submit(120_000);
    await api.viewWhen("queuer", held, (v) => v.status === "running");
    for (let i = 0; i < 12; i++) await submit(0);
    // The runs index hears of each run within about 200 ms: the page is read again until then.
    const asyncRuns = page.locator("dl.facts div", { hasText: "Async runs" }).locator("dd");
    await visit("/dashboard/apps/queuer");
    for (let tries = 0; tries < 50; tries++) {
      if ((await asyncRuns.textContent())?.startsWith("12 queued, 1 running")) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
      await page.reload();
    }
    await expect(asyncRuns.textContent()).resolves.toBe("12 queued, 1 running (the queued runs)");
    const replicas = page.locator("dl.facts div", { hasText: "Replicas now" }).locator("dd");
    await expect(replicas.textContent()).resolves.toMatch(/busy; \d+ calls? waiting at the hosts$/);
    await asyncRuns.getByRole("link", { name: "the queued runs" }).click();
    expect(new URL(page.url()).search).toBe("?app=queuer&status=queued");
    await visit("/dashboard/apps");
    const row = page.locator("tr", { has: page.getByRole("link", { name: "queuer" }) });
    await expect(row.textContent()).resolves.toContain("12 queued, 1 running");
    expect((await api.cancel("queuer", held)).status).toBe(200); // the queue runs now
  });

  it("asks before cancelling a run, naming it: Keep it running leaves it running, Cancel run ends it", async () => {
    // The button cancelled the run on one click.
    const api = client(runlet);
    await api.deploy(QUEUER);
    const res = await api.submit("queuer", { ms: 120_000 }, "async=true");
    const { run_id: runId } = (await json(res)) as { run_id: string };
    await api.viewWhen("queuer", runId, (v) => v.status === "running");
    await visit(`/dashboard/runs/${runId}`);
    await page.getByRole("link", { name: "Cancel run" }).click();
    await checkWithAxe(page);
    await expect(page.locator("h1").textContent()).resolves.toBe("Cancel a run");
    await expect(page.textContent("main")).resolves.toContain(
      `Cancel run ${runId} of queuer (run, running)? It ends cancelled at once`,
    );
    await page.getByRole("link", { name: "Keep it running" }).click();
    expect(new URL(page.url()).pathname).toBe(`/dashboard/runs/${runId}`);
    expect((await api.view("queuer", runId)).status).toBe("running");
    await page.getByRole("link", { name: "Cancel run" }).click();
    await page.getByRole("button", { name: "Cancel run" }).click();
    expect(new URL(page.url()).pathname).toBe(`/dashboard/runs/${runId}`);
    expect((await api.view("queuer", runId)).status).toBe("cancelled");
    await expect(page.locator("ol.timeline").textContent()).resolves.toContain("Ended: cancelled");
  });

  it("shows an operator (the local owner) this Runlet's host from the navigation, and asks before draining it", async () => {
    const hosts = async () =>
      (
        await json(
          await fetch(`${base()}/v2/hosts`, {
            headers: { authorization: `Bearer ${runlet.local.token}` },
          }),
        )
      ).hosts as Array<{ id: string; address: string; state: string }>;
    const [host] = await hosts();
    await visit("/dashboard/runs");
    await page
      .getByRole("navigation", { name: "Sections" })
      .getByRole("link", { name: "Hosts" })
      .click();
    await checkWithAxe(page);
    const row = page.locator("tr", { hasText: host?.id as string });
    await expect(row.locator(".status").textContent()).resolves.toBe("up");
    await expect(row.textContent()).resolves.toContain(host?.address);
    await row.getByRole("link", { name: /^Drain / }).click();
    await checkWithAxe(page);
    await expect(page.locator("h1").textContent()).resolves.toBe("Drain a host");
    await page.getByRole("link", { name: "Keep it as it is" }).click();
    expect(new URL(page.url()).pathname).toBe("/dashboard/hosts");
    expect((await hosts()).find((h) => h.id === host?.id)?.state).toBe("up");
  });

  it("passes axe on every page, light and dark, and no page logged a script error", async () => {
    await visit("/dashboard/apps");
    await visit("/dashboard/apps/talker");
    await visit("/dashboard/secrets");
    expect(violations).toEqual([]);
    expect(errors).toEqual([]);
  });
});

async function streamText(stream: NodeJS.ReadableStream): Promise<string> {
  let text = "";
  for await (const chunk of stream) text += chunk;
  return text;
}

/** A page of another origin (another loopback port), as an attacker's site would be. */
async function serve(html: string): Promise<{ url: string; server: Server }> {
  const server = createServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/html" });
    res.end(html);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, server };
}
