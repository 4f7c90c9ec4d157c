// Forms and confirmations in a real browser (Debian's Chromium) at 1280 px, against a real control
// plane over libSQL. The button that confirms is as wide as its words: it stretched across the
// page (1240 px), a red bar under the question that read as a banner rather than a button. A
// secret's name the API would refuse is refused before the form is sent, the value kept in its
// field: sent, the name came back and the value (never sent back) had to be pasted again.
import type { Page } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { dashboardStack, newContext, screenshotOnFailure } from "./browser.ts";

let stack: Awaited<ReturnType<typeof dashboardStack>>;
let base: string;
let page: Page;
let account: string;

beforeAll(async () => {
  stack = await dashboardStack();
  const { f } = stack;
  base = stack.base;
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${base}/v2/projects/${f.projectId}${path}`, {
      method,
      headers: { authorization: `Bearer ${f.owner.token}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    expect(res.status, `${method} ${path}`).toBeLessThan(300);
    return (res.status === 204 ? {} : await res.json()) as { url: string; id: string };
  };
  await call("PUT", "/secrets/DB_URL", { value: "x" });
  const expiresAt = new Date(Date.now() + 86_400_000).toISOString();
  account = (await call("POST", "/service-accounts", { name: "ci", expiresAt })).id;
  const { url } = await call("POST", "/dashboard-links");
  page = await (await newContext(stack.browser, [])).newPage();
  await page.goto(url);
}, 60_000);

screenshotOnFailure(() => page);

afterAll(() => stack?.close());

it("sizes the confirming button to its words, on the secret's and the API key's pages", async () => {
  const wide: string[] = [];
  for (const [path, name] of [
    ["/dashboard/secrets/DB_URL/delete", "Delete"],
    [`/dashboard/api-keys/${account}/revoke`, "Revoke"],
  ] as const) {
    await page.goto(`${base}${path}`);
    const box = await page.getByRole("button", { name, exact: true }).boundingBox();
    if (!box || box.width > 200) wide.push(`${path}: ${box?.width} px`);
  }
  expect(wide).toEqual([]);
});

it("refuses a secret's name the API would refuse in the browser, the value kept where it was typed", async () => {
  await page.goto(`${base}/dashboard/secrets`);
  let posted = 0;
  page.on("request", (req) => {
    if (req.method() === "POST") posted++;
  });
  await page.getByLabel("Name").fill("bad name!");
  await page.getByLabel("Value").fill("-----BEGIN KEY-----\nabc\n-----END KEY-----");
  await page.getByRole("button", { name: "Save" }).click();
  await expect(page.locator("#f-name:invalid").count()).resolves.toBe(1);
  expect(posted).toBe(0);
  await expect(page.getByLabel("Value").inputValue()).resolves.toContain("abc");
});
