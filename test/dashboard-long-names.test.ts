// Long names in the dashboard's tables, in a real browser (Debian's Chromium) at 1280 px against a
// real control plane over libSQL: a name of 64 characters without a space (the most a service
// account, a user, a join token or a host may have; a secret's, 128) wraps in its cell, so each table fits the
// page and the row's Revoke stays on screen. The cells kept every name on one line: the API keys
// table scrolled sideways, its Revoke button past the right edge. The audit log's entries, made by
// a browser's user agent and with metadata, fit as well: its IP, user agent and metadata columns
// made the table 1685 px wide in a 1238 px box, off screen until it was scrolled. So does the runs
// table, of an app whose name has 63 characters (its Webhook column was past the edge). At 390 px, the
// tables scroll in their own boxes and the page keeps the window's width.
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { eq } from "drizzle-orm";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId } from "../common/ids.ts";
import { users } from "../control-plane/db/schema.ts";
import { serveControlPlane } from "../control-plane/listen.ts";
import { INTERNAL_TOKEN } from "../control-plane/testing/fixture.ts";
import { libsqlFixture } from "../control-plane/testing/libsql.ts";
import { launchChromium, newContext, screenshotOnFailure, seriousViolations } from "./browser.ts";

let f: Awaited<ReturnType<typeof libsqlFixture>>;
let server: Server;
let base: string;
let browser: Browser;
let page: Page;
const errors: string[] = [];

/** A name as long as names go, with nowhere to break it. */
const long = (letter: string) => letter.repeat(64);
/** A secret's name as long as they go: 128 characters. */
const SECRET = `S${"_".repeat(127)}`;
/** An app's name as long as they go (63), with no hyphen to break at. */
const APP = "r".repeat(63);
/** What a browser sends: the audit log records it with each entry. */
const AGENT =
  "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.2903.86";

const call = async (method: string, path: string, token: string, body?: unknown) => {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      "content-type": "application/json",
      "user-agent": AGENT,
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  expect(res.status, `${method} ${path}: ${await res.clone().text()}`).toBeLessThan(300);
  return res.status === 204 ? {} : ((await res.json()) as Record<string, string>);
};

beforeAll(async () => {
  f = await libsqlFixture();
  await f.db.update(users).set({ operator: true }).where(eq(users.id, f.owner.id));
  server = serveControlPlane(f.app, { port: 0, hostname: "127.0.0.1" });
  await new Promise<void>((resolve) => server.once("listening", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  // A user with a long name, owner and operator, who makes the rest: their name shows as "by".
  const project = `/v2/projects/${f.projectId}`;
  const expiresAt = new Date(Date.now() + 30 * 86_400_000).toISOString();
  const user = await call("POST", `${project}/users`, f.owner.token, {
    name: long("u"),
    expiresAt,
    role: "owner",
    operator: true,
  });
  const token = user.token as string;
  await call("POST", `${project}/service-accounts`, token, { name: long("s"), expiresAt });
  await call("PUT", `${project}/secrets/${SECRET}`, token, { value: "x" });
  // An entry with metadata as an update writes it: what changed, from what to what.
  await call("PATCH", project, token, { name: long("p"), plan: "enterprise" });
  const join = await call("POST", "/v2/hosts/tokens", token, { name: long("j") });
  await call("POST", "/internal/hosts", join.token as string, {
    name: long("h"),
    address: "http://10.8.1.2:8790",
    slots: 4,
    memoryMb: 1024,
  });

  // A run of an app whose name is as long as they go (63), by a custom app's long path, whose
  // webhook failed: the runs index has it as the Worker reports it.
  await call("POST", "/internal/runs", INTERNAL_TOKEN, {
    runs: [
      {
        id: newId("run"),
        projectId: f.projectId,
        app: APP,
        function: `GET /${"p".repeat(60)}`,
        async: true,
        status: "success",
        createdAt: Date.now(),
        finishedAt: Date.now(),
        runTimeMs: 12,
        webhook: { state: "failed", attempts: 3 },
      },
    ],
  });

  browser = await launchChromium();
  const { url } = await call("POST", `${project}/dashboard-links`, f.owner.token);
  page = await (await newContext(browser, errors)).newPage();
  await page.goto(url as string);
}, 60_000);

screenshotOnFailure(() => page);

afterAll(async () => {
  await browser?.close();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  await f?.cleanup();
});

/** The tables of the page that scroll sideways, by label, with how far. */
const wideTables = () =>
  page.$$eval(".table-wrap", (wraps) =>
    wraps
      .filter((w) => w.scrollWidth > w.clientWidth)
      .map((w) => `${w.getAttribute("aria-label")}: ${w.scrollWidth} > ${w.clientWidth}`),
  );

describe("a name of 64 characters without a space, at 1280 px", () => {
  it("wraps on the API keys page: the service account's Revoke stays on screen", async () => {
    await page.goto(`${base}/dashboard/api-keys`);
    const row = page.locator("tr", { hasText: long("s") });
    await expect(row.textContent()).resolves.toContain(`by ${long("u")}`);
    const revoke = await row.getByRole("link", { name: /Revoke/ }).boundingBox();
    expect(revoke && revoke.x + revoke.width).toBeLessThanOrEqual(1280);
    await expect(page.locator("tr", { hasText: long("u") }).count()).resolves.toBeGreaterThan(0);
    expect(await wideTables()).toEqual([]);
    expect(await seriousViolations(page)).toEqual([]);
  });

  it("wraps on the secrets page: a secret's name of 128 characters, and its Delete on screen", async () => {
    await page.goto(`${base}/dashboard/secrets`);
    const row = page.locator("tr", { hasText: SECRET });
    await expect(row.textContent()).resolves.toContain(long("u"));
    const remove = await row.getByRole("link", { name: /Delete/ }).boundingBox();
    expect(remove && remove.x + remove.width).toBeLessThanOrEqual(1280);
    expect(await wideTables()).toEqual([]);
  });

  it("wraps on the hosts and join-token pages too", async () => {
    for (const [path, name] of [
      ["/dashboard/hosts", long("h")],
      ["/dashboard/hosts/tokens", long("j")],
    ] as const) {
      await page.goto(`${base}${path}`);
      await expect(page.locator("table").textContent(), path).resolves.toContain(name);
      expect([path, await wideTables()]).toEqual([path, []]);
    }
    expect(errors).toEqual([]);
  });
});

describe("the runs at 1280 px, of an app whose name has 63 characters", () => {
  it("wraps the app's name and the function: the run's webhook result stays on screen", async () => {
    await page.goto(`${base}/dashboard/runs`);
    const row = page.locator("tbody tr", { hasText: APP });
    await expect(row.textContent()).resolves.toContain("failed");
    const webhook = await row.locator("td").last().boundingBox();
    expect(webhook && webhook.x + webhook.width).toBeLessThanOrEqual(1280);
    expect(await wideTables()).toEqual([]);
  });
});

describe("tables with a column of buttons, at 390 px", () => {
  // Each table scrolls in its own box; the page does not. The heading of the buttons' column
  // (read by screen readers only, positioned absolutely) was placed against the page, past the
  // window's edge, and the page scrolled sideways to it. html.scrollWidth said 390 all along: a
  // scroll is what shows it.
  it("leaves the page its window's width on the API keys, secrets, hosts and join-token pages", async () => {
    await page.setViewportSize({ width: 390, height: 800 });
    try {
      const scrolled: string[] = [];
      for (const path of ["/api-keys", "/secrets", "/hosts", "/hosts/tokens"]) {
        await page.goto(`${base}/dashboard${path}`);
        // The window's own scroll (html.scrollLeft stays 0 here too).
        const x = await page.evaluate<number>("window.scrollTo(2000, 0), window.scrollX");
        if (x > 0) scrolled.push(`${path}: ${x} px`);
      }
      expect(scrolled).toEqual([]);
    } finally {
      await page.setViewportSize({ width: 1280, height: 800 });
    }
  });
});

describe("the audit log at 1280 px, its entries made by a browser, with metadata", () => {
  it("fits the page: each entry's request (IP, user agent, request id, metadata) wraps in one cell", async () => {
    const listed = await call(
      "GET",
      `/v2/projects/${f.projectId}/audit-log?action=projects.update`,
      f.owner.token,
    );
    const [entry] = (listed as unknown as { logs: Array<{ requestId: string; ip: string }> }).logs;
    await page.goto(`${base}/dashboard/audit-log`);
    expect(await wideTables()).toEqual([]);
    // Every part of the entry is on screen, none of it cut off in its cell.
    const row = page.locator("tbody tr", { hasText: "projects.update" });
    const text = await row.textContent();
    for (const shown of [
      AGENT,
      entry?.requestId,
      entry?.ip,
      '"plan":{"from":"hobby","to":"enterprise"}',
    ])
      expect(text).toContain(shown);
    const cells = await row.locator("td").evaluateAll((tds) =>
      tds.map((td) => ({
        right: td.getBoundingClientRect().right,
        cut: td.scrollWidth > td.clientWidth,
      })),
    );
    expect(cells.filter((c) => c.right > 1280 || c.cut)).toEqual([]);
    expect(await seriousViolations(page)).toEqual([]);
  });

  it("scrolls its table alone at 390 px: the page itself keeps the window's width", async () => {
    await page.setViewportSize({ width: 390, height: 800 });
    try {
      await page.goto(`${base}/dashboard/audit-log`);
      const width = await page.locator("html").evaluate((html) => html.scrollWidth);
      expect(width).toBeLessThanOrEqual(390);
      await expect(page.getByRole("link", { name: "Export CSV" }).isVisible()).resolves.toBe(true);
    } finally {
      await page.setViewportSize({ width: 1280, height: 800 });
    }
    expect(errors).toEqual([]);
  });
});
