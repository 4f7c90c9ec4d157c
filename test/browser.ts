/**
 * Debian's Chromium, driven by playwright-core, for the dashboard's tests: launched as CI
 * launches it, with every page's script errors collected, and axe's serious and critical
 * findings as one list.
 */
import { mkdir } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import AxeBuilder from "@axe-core/playwright";
import type { Browser, BrowserContext, BrowserContextOptions, Page } from "playwright-core";
import { afterEach } from "vitest";
import { serveControlPlane } from "../control-plane/listen.ts";
import { libsqlFixture } from "../control-plane/testing/libsql.ts";
import { launchChromium } from "./chromium.ts";
import { ROOT } from "./harness.ts";

export { CHROMIUM, launchChromium } from "./chromium.ts";

/**
 * A control plane over libSQL on a loopback port, its dashboard at `base`, and Chromium: what a
 * dashboard test file starts before its tests; `close` stops all three.
 */
export async function dashboardStack() {
  const f = await libsqlFixture();
  const server = serveControlPlane(f.app, { port: 0, hostname: "127.0.0.1" });
  await new Promise<void>((resolve) => server.once("listening", resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const browser = await launchChromium();
  return {
    f,
    base,
    browser,
    async close() {
      await browser.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await f.cleanup();
    },
  };
}

/**
 * A fresh context (no cookies) whose pages report script errors into `errors`; `options` as
 * playwright's (a `timezoneId`, say).
 */
export async function newContext(
  browser: Browser,
  errors: string[],
  options: BrowserContextOptions = {},
): Promise<BrowserContext> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, ...options });
  context.on("page", (page) => watch(page, errors));
  return context;
}

function watch(page: Page, errors: string[]): void {
  page.on("pageerror", (err) => errors.push(`${page.url()}: ${err.message}`));
  page.on("console", (msg) => {
    // A page answered 4xx on purpose (a used link, a refused form) is the network's note, not
    // a script's error.
    if (msg.type() === "error" && !msg.text().startsWith("Failed to load resource"))
      errors.push(`${page.url()}: ${msg.text()}`);
  });
}

/**
 * axe's findings of impact serious or critical on the page as it is now. Run in the page itself
 * (legacy mode: the dashboard's pages have no frames, whose partial runs the default mode
 * gathers in a blank page it opens for each check), and with the details of passes and
 * inapplicable rules cut to one node each (resultTypes): every violation comes as before,
 * about 0.9 s a check less on a page.
 */
export async function seriousViolations(page: Page): Promise<string[]> {
  const { violations } = await new AxeBuilder({ page })
    .setLegacyMode()
    .options({ resultTypes: ["violations"] })
    .analyze();
  return violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${page.url()}: ${v.id} (${v.impact}): ${v.nodes.map((n) => n.target).join(" ")}`);
}

/** Saves the page as test-results/dashboard-<name>.png (for a failed test). */
export async function screenshot(page: Page, name: string): Promise<void> {
  const dir = join(ROOT, "test-results");
  await mkdir(dir, { recursive: true });
  await page.screenshot({ path: join(dir, `dashboard-${name}.png`), fullPage: true });
}

/** After each failed test of the file, a screenshot of `page()` named for the test. */
export function screenshotOnFailure(page: () => Page | undefined): void {
  afterEach(async (context) => {
    const open = page();
    if (context.task.result?.state === "fail" && open)
      await screenshot(open, context.task.name.replace(/\W+/g, "-").slice(0, 60));
  });
}
