// The Back button after a filter, in a real browser (Debian's Chromium) against a real control
// plane over libSQL: the page Back returns to shows the filters its address has. The browser put
// back the ones last chosen instead, so the whole list showed under status "failure" (the runs)
// or outcome "failure" (the audit log), and read as filtered.
import type { Page } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { dashboardStack, newContext, screenshotOnFailure } from "./browser.ts";

let stack: Awaited<ReturnType<typeof dashboardStack>>;
let base: string;
let page: Page;
const errors: string[] = [];

beforeAll(async () => {
  stack = await dashboardStack();
  const { f } = stack;
  base = stack.base;
  const res = await fetch(`${base}/v2/projects/${f.projectId}/dashboard-links`, {
    method: "POST",
    headers: { authorization: `Bearer ${f.owner.token}` },
  });
  const { url } = (await res.json()) as { url: string };
  page = await (await newContext(stack.browser, errors)).newPage();
  await page.goto(url);
}, 60_000);

screenshotOnFailure(() => page);

afterAll(() => stack?.close());

/** Chooses `value` in the select `name` of `path`, filters, and goes Back: the select's value. */
async function backAfterFilter(path: string, name: string, value: string): Promise<string> {
  await page.goto(`${base}${path}`);
  await page.selectOption(`select[name=${name}]`, value);
  await Promise.all([
    page.waitForURL(`**${path}?**`),
    page.getByRole("button", { name: "Filter" }).click(),
  ]);
  expect(new URL(page.url()).searchParams.get(name)).toBe(value);
  await page.goBack();
  expect(page.url()).toBe(`${base}${path}`);
  return page.inputValue(`select[name=${name}]`);
}

it("shows the runs page Back returns to with its own filters, not the ones chosen after", async () => {
  await expect(backAfterFilter("/dashboard/runs", "status", "failure")).resolves.toBe("");
});

it("shows the audit log Back returns to with its own filters too", async () => {
  await expect(backAfterFilter("/dashboard/audit-log", "outcome", "failure")).resolves.toBe("");
  expect(errors).toEqual([]);
});
