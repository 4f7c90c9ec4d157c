import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type AppFolders, appFolders } from "./app-folders.ts";
import { launchChromium, newContext, screenshotOnFailure } from "./browser.ts";
import { cli, type Runlet } from "./harness.ts";
import { sharedRunlet } from "./shared-stack.ts";

let runlet: Runlet;
let apps: AppFolders;
let browser: Browser | undefined;
let page: Page | undefined;

beforeAll(async () => {
  apps = await appFolders("rollback");
  runlet = await sharedRunlet("rollback");
});

screenshotOnFailure(() => page);

afterAll(async () => {
  await browser?.close();
  await runlet?.stop();
  await apps?.remove();
});

/** Deploys the app `hello` answering `answer`. */
async function deploy(answer: string) {
  const main = `export const run = () => ${JSON.stringify(answer)};\n`;
  const deployed = await cli(
    ["deploy", await apps.write("hello", { "main.mjs": main })],
    runlet.env,
  );
  expect(deployed.code, deployed.stderr).toBe(0);
}

/** A sync call of the app: its result. */
async function call(): Promise<unknown> {
  const { apiUrl, projectId, token } = runlet.local;
  const res = await fetch(`${apiUrl}/v4/${projectId}/hello/run`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: "{}",
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { result: unknown }).result;
}

it("rolls an app back to the version before the live one, as a new version that answers as the old one did", async () => {
  await deploy("one");
  await deploy("two");
  expect(await call()).toBe("two");

  const rolled = await cli(["apps", "rollback", "hello"], runlet.env);
  expect(rolled.code, rolled.stderr).toBe(0);
  expect(rolled.stdout).toMatch(
    /^Rolled hello back to version 1's code as version 3 \(managed runtime\) in \d+ ms\n$/,
  );
  expect(rolled.stderr).toContain("Rolling hello back to version 1's code");
  expect(rolled.stderr).toMatch(/Its replica started in \d+ ms \(runtime host hst_/);
  expect(await call()).toBe("one");

  const shown = await cli(["apps", "show", "hello"], runlet.env);
  expect(shown.stdout).toMatch(/^ {2}version {7}3 \(managed\), deployed /m);
  expect(shown.stdout).toMatch(/^ {2}functions {5}run$/m); // as the start check found them

  // The versions to roll back to: v3 live, v1 its code, v2 kept.
  const listed = await cli(["apps", "versions", "hello"], runlet.env);
  expect(listed.code, listed.stderr).toBe(0);
  const rows = listed.stdout.split("\n").filter((line) => /^v\d/.test(line));
  const columns = rows.map((r) => r.split(/ {2,}/));
  expect(columns.map((c) => `${c[0]} | ${c.at(-1)}`)).toEqual([
    "v3 | live",
    "v2 | kept: apps rollback hello --to 2",
    "v1 | the live code",
  ]);
  expect(columns.map((c) => c[2])).toEqual(["local owner", "local owner", "local owner"]);

  // The live version is refused in the API's words, and nothing changes.
  const again = await cli(["apps", "rollback", "hello", "--to", "3", "--json"], runlet.env);
  expect(again.code).toBe(1);
  expect(JSON.parse(again.stdout)).toMatchObject({
    status: 409,
    message: "rollback failed (409): version 3 of 'hello' is already live: nothing was deployed",
  });
});

it("rolls back from the dashboard in a browser: the app page's link, its confirmation, then the app page saying what was done", async () => {
  // After the case above: version 3 (version 1's code) is live, answering "one".
  await deploy("four");
  expect(await call()).toBe("four");
  const errors: string[] = [];
  browser = await launchChromium();
  page = await (await newContext(browser, errors)).newPage();
  const link = await cli(["dashboard", "--json"], runlet.env);
  expect(link.code, link.stderr).toBe(0);
  await page.goto((JSON.parse(link.stdout) as { url: string }).url);

  await page.goto(`${runlet.local.baseUrl}/dashboard/apps/hello`);
  await page.getByRole("link", { name: "Roll back to version 2" }).click();
  await expect(page.locator("h1").textContent()).resolves.toBe("Roll back an app");
  await page.getByRole("button", { name: "Roll back to version 2" }).click();

  expect(new URL(page.url()).pathname).toBe("/dashboard/apps/hello");
  await expect(page.getByRole("status").first().textContent()).resolves.toContain(
    "Rolled hello back to version 2's code as version 5: new calls get it",
  );
  expect(await call()).toBe("two");
  expect(errors).toEqual([]);
});
