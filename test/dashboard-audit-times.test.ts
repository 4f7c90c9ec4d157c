// The audit log's times in a real browser (Debian's Chromium) whose zone is not UTC, against a
// real control plane over libSQL: a time read off a row, typed into From and To, finds that row.
// The rows were shown in the reader's zone (`00:16:06 EST`) while From and To are UTC, so the
// time typed there was five hours off; the fields had no seconds to type (step "any"), so a
// row's 19:35:18 typed in became 07:35 AM; and To, to the second, ended at that second's first
// millisecond, before the entry shown with it.
import type { Page } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { dashboardStack, newContext, screenshotOnFailure } from "./browser.ts";

let stack: Awaited<ReturnType<typeof dashboardStack>>;
let page: Page;
const errors: string[] = [];

beforeAll(async () => {
  stack = await dashboardStack();
  const { f, base } = stack;
  const res = await fetch(`${base}/v2/projects/${f.projectId}/dashboard-links`, {
    method: "POST",
    headers: { authorization: `Bearer ${f.owner.token}` },
  });
  const { url } = (await res.json()) as { url: string };
  const context = await newContext(stack.browser, errors, {
    timezoneId: "America/New_York",
    locale: "en-US",
  });
  page = await context.newPage();
  await page.goto(url);
}, 60_000);

screenshotOnFailure(() => page);

afterAll(() => stack?.close());

/**
 * Types `typed` (`2026-11-27T19:35:18`) into the `datetime-local` field `label` with the keyboard,
 * as an en-US reader does: month, day, year, then the time in its 12-hour form and AM or PM.
 */
async function typeTime(label: string, typed: string): Promise<void> {
  const [y, mo, d, h, mi, s] = typed.split(/[-T:]/);
  const hour = Number(h);
  const field = page.getByLabel(label);
  await field.click({ position: { x: 12, y: 10 } }); // its month
  await page.keyboard.type(`${mo}${d}${y}`);
  await page.keyboard.press("ArrowRight"); // a year takes up to 6 digits
  await page.keyboard.type(`${String(hour % 12 || 12).padStart(2, "0")}${mi}${s}`);
  await page.keyboard.press("ArrowRight"); // past the milliseconds, left empty
  await page.keyboard.type(hour < 12 ? "A" : "P");
}

/** Writes the secret `name` through the API: its audit entry's request id. */
async function writeSecret(name: string): Promise<string> {
  const { f, base } = stack;
  const res = await fetch(`${base}/v2/projects/${f.projectId}/secrets/${name}`, {
    method: "PUT",
    headers: { authorization: `Bearer ${f.owner.token}`, "content-type": "application/json" },
    body: JSON.stringify({ value: "v" }),
  });
  expect(res.status, await res.text()).toBe(204);
  return res.headers.get("x-request-id") ?? "";
}

it("finds a row by the time it shows, typed into From and To, in a browser five hours behind UTC", async () => {
  const requestId = await writeSecret("ZONED");
  await page.goto(`${stack.base}/dashboard/audit-log?action=secrets.write`);
  expect(await page.evaluate(() => new Date(Date.UTC(2026, 10, 27)).getTimezoneOffset())).toBe(300);
  const row = page.locator("tr", { hasText: requestId });
  const shown = (await row.locator("time").textContent()) ?? "";
  // As a reader types it: the date and the time, without the zone's name.
  const [date, time] = shown.split(" ");
  const typed = `${date}T${time}`;
  // The field's own value drops seconds of 0 (HTML's normalized form).
  const field = typed.endsWith(":00") ? typed.slice(0, 16) : typed;
  await typeTime("From (UTC)", typed);
  await typeTime("To (UTC)", typed);
  await Promise.all([
    page.waitForURL("**/dashboard/audit-log?**"),
    page.getByRole("button", { name: "Filter" }).click(),
  ]);
  expect(new URL(page.url()).searchParams.get("from")).toBe(field);
  await expect(page.locator("tr", { hasText: requestId }).count()).resolves.toBe(1);
  // Said in UTC, as the fields take it, and said so.
  expect(shown).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC$/);
  await expect(page.getByRole("columnheader", { name: "Time (UTC)" }).count()).resolves.toBe(1);
  // The fields still hold the window, and the export link takes that whole second too.
  await expect(page.getByLabel("From (UTC)").inputValue()).resolves.toBe(field);
  const csv = await page.getByRole("link", { name: "Export CSV" }).getAttribute("href");
  expect(new URL(csv ?? "", stack.base).searchParams.get("to")).toBe(`${typed}.999Z`);
  expect(errors).toEqual([]);
});
