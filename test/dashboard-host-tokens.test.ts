// The join-tokens page in a real browser (Debian's Chromium) against a real control plane over
// libSQL: an operator goes from the hosts page to its join tokens, makes one, sees it once with
// the command a new machine joins with (and a host does join with it), sees it no more after a
// reload, and revokes it on its confirmation page; a bad name shows the API's words; a member who
// is not an operator has no link and is refused. Before, only `runlet hosts token|revoke` did this.
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { eq } from "drizzle-orm";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { users } from "../control-plane/db/schema.ts";
import { serveControlPlane } from "../control-plane/listen.ts";
import { libsqlFixture } from "../control-plane/testing/libsql.ts";
import { launchChromium, newContext, screenshotOnFailure, seriousViolations } from "./browser.ts";

let f: Awaited<ReturnType<typeof libsqlFixture>>;
let server: Server;
let base: string;
let browser: Browser;
let operator: BrowserContext;
let page: Page;
const errors: string[] = [];
const violations: string[] = [];

const call = (method: string, path: string, token: string, body?: unknown) =>
  fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });

/** A page of a new browser context, signed in as the holder of `token` with a one-time link. */
async function signedIn(token: string): Promise<Page> {
  const res = await call("POST", `/v2/projects/${f.projectId}/dashboard-links`, token);
  const { url } = (await res.json()) as { url: string };
  const context = await newContext(browser, errors);
  const on = await context.newPage();
  await on.goto(url);
  expect(new URL(on.url()).pathname).toBe("/dashboard/runs");
  return on;
}

const register = (token: string) =>
  call("POST", "/internal/hosts", token, {
    name: "rack-b",
    address: "http://10.8.1.2:8790",
    slots: 4,
    memoryMb: 1024,
  });
const listed = async () =>
  (
    (await (await call("GET", "/v2/hosts/tokens", f.owner.token)).json()) as {
      tokens: Array<{ id: string; name: string; revokedAt: string | null }>;
    }
  ).tokens;

beforeAll(async () => {
  f = await libsqlFixture();
  await f.db.update(users).set({ operator: true }).where(eq(users.id, f.owner.id));
  server = serveControlPlane(f.app, { port: 0, hostname: "127.0.0.1" });
  await new Promise<void>((resolve) => server.once("listening", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  browser = await launchChromium();
  page = await signedIn(f.owner.token);
  operator = page.context();
}, 60_000);

screenshotOnFailure(() => page);

afterAll(async () => {
  await browser?.close();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  await f?.cleanup();
});

describe("the join-tokens page, in a browser", () => {
  let token = "";

  it("makes a token from the hosts page, shown once with its join command; a host joins with it", async () => {
    await page.goto(`${base}/dashboard/hosts`);
    await page
      .getByRole("navigation", { name: "Hosts and their join tokens" })
      .getByRole("link", { name: "Join tokens" })
      .click();
    await expect(page.locator("h1").textContent()).resolves.toBe("Join tokens");
    await expect(page.getByRole("table", { name: "Join tokens" }).textContent()).resolves.toContain(
      "No join token yet.",
    );
    violations.push(...(await seriousViolations(page)));

    await page.getByLabel("Name").fill("rack-b");
    await page.getByRole("button", { name: "Create" }).click();
    token = (await page.locator("#new-token").textContent())?.trim() ?? "";
    expect(token).toMatch(/^rlh_/);
    await expect(page.locator("#join-command").textContent()).resolves.toBe(
      `RUNLET_HOST_TOKEN=${token} npx runlet host --control-plane ${base} --address http://<its address>:8790`,
    );
    await expect(page.locator(".secret-once").textContent()).resolves.toContain(
      "Copy it now: it is shown this once.",
    );
    expect(page.url()).toBe(`${base}/dashboard/hosts/tokens`);
    violations.push(...(await seriousViolations(page)));

    expect((await register(token)).status).toBe(200);
    const tokens = await listed();
    expect(tokens.map((t) => t.name)).toEqual(["rack-b"]);
    expect(JSON.stringify(tokens)).not.toContain(token);

    // A reload shows the list without the token, and makes no second one: the page's script
    // made the reload a GET (without it, the form is sent again and refused: the in-process test).
    await page.reload();
    expect(await page.locator("#new-token").count()).toBe(0);
    expect(await page.locator("main").textContent()).not.toContain("No second token was made");
    expect(await page.content()).not.toContain(token);
    await expect(page.locator("tr", { hasText: "rack-b" }).textContent()).resolves.toContain(
      "active",
    );
    expect((await listed()).length).toBe(1);

    // A second of the name, while it is live, is refused with the API's words; none is made.
    await page.getByLabel("Name").fill("rack-b");
    await page.getByRole("button", { name: "Create" }).click();
    await expect(page.getByRole("alert").textContent()).resolves.toContain(
      `a host token named 'rack-b' is live already (${tokens[0]?.id}): revoke it first`,
    );
    expect(await page.locator("#new-token").count()).toBe(0);
    expect((await listed()).length).toBe(1);
  });

  it("revokes it on its confirmation page: its host is refused at its next heartbeat", async () => {
    await page.goto(`${base}/dashboard/hosts/tokens`);
    const row = page.locator("tr", { hasText: "rack-b" });
    await row.getByRole("link", { name: "Revoke rack-b" }).click();
    await expect(page.locator("h1").textContent()).resolves.toBe("Revoke a join token");
    await expect(page.locator("main").textContent()).resolves.toContain(
      "are refused at their next heartbeat",
    );
    violations.push(...(await seriousViolations(page)));
    await page.getByRole("button", { name: "Revoke" }).click();
    expect(page.url()).toBe(`${base}/dashboard/hosts/tokens`);
    await expect(page.getByRole("status").first().textContent()).resolves.toContain(
      "rack-b is revoked: hosts that joined with it are refused at their next heartbeat, and stop.",
    );
    await expect(row.locator(".status").textContent()).resolves.toBe("revoked");
    expect(await row.getByRole("link", { name: /Revoke/ }).count()).toBe(0);
    expect((await listed())[0]?.revokedAt).not.toBeNull();
    expect((await register(token)).status).toBe(401);
  });

  it("shows the API's refusal of a name in its words", async () => {
    await page.goto(`${base}/dashboard/hosts/tokens`);
    await page.getByLabel("Name").fill("   ");
    await page.getByRole("button", { name: "Create" }).click();
    await expect(page.getByRole("alert").textContent()).resolves.toBe(
      "No join token was made: name: must not be empty.",
    );
    expect(await page.locator("#new-token").count()).toBe(0);
    expect((await listed()).length).toBe(1);
  });

  it("offers a member who is not an operator no link, and refuses them with the API's 403", async () => {
    const member = await signedIn(f.member.token);
    const nav = member.getByRole("navigation", { name: "Sections" });
    expect(await nav.getByRole("link", { name: "Hosts" }).count()).toBe(0);
    const res = await member.goto(`${base}/dashboard/hosts/tokens`);
    expect(res?.status()).toBe(403);
    await expect(member.getByRole("alert").textContent()).resolves.toBe(
      "Join tokens are for this Runlet's operators: only an operator of this Runlet may see or admit its hosts.",
    );
    expect(await member.locator("form[action='/dashboard/hosts/tokens']").count()).toBe(0);
    expect(await member.getByRole("link", { name: "Join tokens" }).count()).toBe(0);
    await member.context().close();
  });

  it("passes axe on each page it showed, and no page logged a script error", () => {
    expect(violations).toEqual([]);
    expect(errors).toEqual([]);
    expect(operator.pages().length).toBeGreaterThan(0);
  });
});
