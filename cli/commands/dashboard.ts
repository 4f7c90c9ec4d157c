import { spawn } from "node:child_process";
import { CliError, type Command } from "../command.ts";
import { callProject, loadConfig } from "../config.ts";

const USAGE = `Usage: runlet dashboard [page] [--no-open] [--json]

Prints a one-time sign-in link to the project's dashboard and opens it in a browser when this
machine has one. The link works once, for 5 minutes; the session it opens lasts 12 hours at
most, and ends when the token that asked for the link is revoked.

  page        where the link lands once signed in (default: the runs): a dashboard address
              as the browser shows it, or its path (/dashboard/apps/hello, runs/run_…)

  --no-open   only print the link
  --json      print {"url"} and nothing else (implies --no-open)`;

/** The command that opens a URL in the desktop's browser, if there is a desktop. */
function opener(): string | undefined {
  if (process.platform === "darwin") return "open";
  if (process.platform === "win32") return undefined;
  return process.env.DISPLAY || process.env.WAYLAND_DISPLAY ? "xdg-open" : undefined;
}

/** Starts the browser and does not wait for it; false when there is none to start. */
function openInBrowser(url: string): Promise<boolean> {
  const command = opener();
  if (!command) return Promise.resolve(false);
  return new Promise((resolve) => {
    const child = spawn(command, [url], { stdio: "ignore", detached: true });
    child.once("error", () => resolve(false));
    child.once("spawn", () => {
      child.unref();
      resolve(true);
    });
  });
}

/** The dashboard path `page` names: a URL or path of the dashboard, or a path inside it. */
export function landingOf(page: string): string {
  let path = page;
  if (/^https?:\/\//i.test(page)) {
    if (!URL.canParse(page)) throw new CliError(`'${page}' is not a URL\n\n${USAGE}`);
    const url = new URL(page);
    path = url.pathname + url.search;
  } else if (!page.startsWith("/")) {
    path = `/dashboard/${page}`;
  }
  if (!/^\/dashboard(\/|$|\?)/.test(path))
    throw new CliError(`'${page}' is not a dashboard page: give one under /dashboard\n\n${USAGE}`);
  return path;
}

export const dashboard: Command = {
  name: "dashboard",
  summary: "print (and open) a one-time sign-in link to the dashboard",
  usage: USAGE,
  options: { "no-open": { type: "boolean" } },
  async run({ values, positionals }) {
    if (positionals.length > 1)
      throw new CliError(`give one page, not ${positionals.length}\n\n${USAGE}`);
    const landing = positionals[0] === undefined ? undefined : landingOf(positionals[0]);
    const config = await loadConfig();
    const link = await callProject<{ url: string; expiresAt: string }>(
      config,
      "POST",
      "/dashboard-links",
      "making a sign-in link",
    );
    if (landing) link.url += `&next=${encodeURIComponent(landing)}`;
    if (values.json) {
      console.log(JSON.stringify({ url: link.url }));
      return 0;
    }
    console.log(link.url);
    const opened = values["no-open"] ? false : await openInBrowser(link.url);
    console.error(
      opened
        ? "Opened in your browser. The link works once, for 5 minutes."
        : "Open it in a browser on this machine: it works once, for 5 minutes.",
    );
    return 0;
  },
};
