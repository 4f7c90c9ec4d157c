// The dashboard in a real browser (Debian's Chromium) against a real Node control plane: setting
// a secret or creating an API key from a later page of its list comes back to that page. Both
// forms went to page 1, and an owner working down a long list paged back after each one (the
// revoke and delete confirmations kept the place already: control-plane/dashboard/list-place).
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type FirstUser, runlet, withFirstUser } from "../cli/commands/test-support.ts";
import { ENV } from "../common/consts.ts";
import { launchChromium, newContext } from "./browser.ts";

let first: FirstUser;
let browser: Browser;
let page: Page;
const errors: string[] = [];

/** 55 of each, beside the first user's own: two pages of 50 in every list. */
const MANY = 55;
const two = (i: number) => String(i).padStart(2, "0");

beforeAll(async () => {
  first = await withFirstUser("dashboard-place", "owner");
  const local = JSON.parse(
    await readFile(join(first.env[ENV.home] as string, "local.json"), "utf8"),
  );
  const call = async (method: string, path: string, body: unknown) => {
    const res = await fetch(`${first.baseUrl}/v2/projects/${local.projectId}${path}`, {
      method,
      headers: { authorization: `Bearer ${local.token}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    expect(res.status, `${method} ${path}: ${await res.text()}`).toBeLessThan(300);
  };
  const expiresAt = new Date(Date.now() + 30 * 86_400_000).toISOString();
  for (let i = 0; i < MANY; i++) {
    await call("POST", "/service-accounts", { name: `sa-${two(i)}`, expiresAt });
    await call("POST", "/users", { name: `user-${two(i)}`, expiresAt });
    await call("PUT", `/secrets/S_${two(i)}`, { value: "x" });
  }
  browser = await launchChromium();
  page = await (await newContext(browser, errors)).newPage();
  const link = await runlet(["dashboard", "--json", "--no-open"], first.env);
  expect(link.code, link.stderr).toBe(0);
  await page.goto((JSON.parse(link.stdout) as { url: string }).url);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await first?.stop();
});

/** Follows the "Next page" link of the pager named `label`; the address it lands on. */
async function nextPage(label: string): Promise<string> {
  await page
    .getByRole("navigation", { name: label })
    .getByRole("link", { name: "Next page" })
    .click();
  await page.waitForLoadState();
  return page.url();
}

/** The text of the first cell of each row of the table named `label`. */
/** The first cell of each row: a name, less a service account's id under it. */
const firstCells = async (label: string) =>
  (
    await page
      .getByRole("table", { name: label })
      .locator("tbody tr td:first-child")
      .allTextContents()
  ).map((text) => text.replace(/sa_\w+$/, ""));

it("sets a secret from page 2 and stays on page 2", async () => {
  await page.goto(`${first.baseUrl}/dashboard/secrets`);
  const second = await nextPage("Pages");
  expect(new URL(second).searchParams.get("cursor")).toBeTruthy();
  const listed = await firstCells("Secrets");
  expect(listed).toContain("S_52");
  await page.getByLabel("Name").fill("S_52");
  await page.getByLabel("Value").fill("replaced");
  await page.getByRole("button", { name: "Save" }).click();
  await page.getByText("S_52 is saved.").waitFor();
  expect(page.url()).toBe(second);
  expect(await firstCells("Secrets")).toEqual(listed);
});

it("creates an API key from page 2 of both lists, shows its token, and stays on those pages", async () => {
  await page.goto(`${first.baseUrl}/dashboard/api-keys`);
  await nextPage("Pages of service accounts");
  const both = await nextPage("Pages of users");
  const place = new URL(both).searchParams;
  expect([place.get("cursor"), place.get("users")].every(Boolean)).toBe(true);
  const accounts = await firstCells("Service accounts");
  const users = await firstCells("Users");
  expect(accounts).toContain("sa-02");
  expect(users).toContain("user-52");
  await page.getByLabel("Name").fill("ci-late");
  await page.getByRole("button", { name: "Create" }).click();
  await page.locator("#new-token").waitFor();
  expect((await page.locator("#new-token").textContent())?.trim()).toMatch(/^ey/);
  expect(page.url()).toBe(both);
  // The same rows of both lists: the newest account comes first, on page 1, where it is.
  expect(await firstCells("Users")).toEqual(users);
  expect(await firstCells("Service accounts")).toEqual(accounts);
  await page.goto(`${first.baseUrl}/dashboard/api-keys`);
  expect((await firstCells("Service accounts"))[0]).toBe("ci-late");
  expect(errors).toEqual([]);
});
