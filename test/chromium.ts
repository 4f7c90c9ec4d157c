/**
 * Debian's Chromium, launched as CI launches it, for the dashboard's tests (test/browser.ts) and
 * for the pictures in docs/ (scripts/docs-screenshots.ts): no vitest here, so a plain script can
 * use it.
 */
import { existsSync } from "node:fs";
import { type Browser, chromium } from "playwright-core";

export const CHROMIUM = "/usr/bin/chromium";

export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `${CHROMIUM} is missing: the dashboard's tests need Debian's chromium (apt-get install chromium; .ci/run installs it)`,
    );
  }
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      "--no-sandbox",
      "--headless",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--no-first-run",
    ],
  });
}
