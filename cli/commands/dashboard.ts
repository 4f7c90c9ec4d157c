import { spawn } from "node:child_process";
import { didYouMean } from "../../common/closest.ts";
import { DASHBOARD_PAGES } from "../../common/dashboard-sections.ts";
import { CliError, type Command } from "../command.ts";
import { callProject, loadConfig } from "../config.ts";

const USAGE = `Usage: runlet dashboard [page] [--no-open] [--json]

Prints a one-time sign-in link to the project's dashboard and opens it in a browser when this
machine has one. The link works once, for 5 minutes; the session it opens lasts 12 hours at
most, and ends when the token that asked for the link is revoked.

  page        where the link lands once signed in (default: the runs): a dashboard address
              as the browser shows it, or its path (/dashboard/apps/hello, runs/run_…);
              one that leads out of /dashboard, as ../v2 does, is refused

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

/** Where the paths are resolved: only the path and query of the result are kept. */
const BASE = "http://dashboard.invalid";

/**
 * The dashboard path `page` names: a URL or path of the dashboard, or a path inside it, resolved
 * as the browser resolves it. `runs/../../v2/projects` is `/v2/projects`, not a dashboard page:
 * it was sent as it came, and the sign-in put the runs page in its place without a word.
 */
export function landingOf(page: string): string {
  const isUrl = /^https?:\/\//i.test(page);
  if (isUrl && !URL.canParse(page)) throw new CliError(`'${page}' is not a URL\n\n${USAGE}`);
  const joined = isUrl || page.startsWith("/") ? page : `/dashboard/${page}`;
  const url = new URL(joined, BASE);
  // `//host/dashboard` is another site's, as a browser reads it.
  const here = isUrl || url.origin === BASE;
  if (!here || !/^\/dashboard(\/|$)/.test(url.pathname)) {
    const moved = here && !isUrl && url.pathname + url.search !== joined;
    const leads = moved ? ` (it leads to ${url.pathname})` : "";
    throw new CliError(
      `'${page}' is not a dashboard page${leads}: give one under /dashboard, as apps/hello or /dashboard/runs/run_…\n\n${USAGE}`,
    );
  }
  const section = url.pathname.split("/")[2];
  if (section && !DASHBOARD_PAGES.includes(section))
    throw new CliError(
      `'${page}' is not a dashboard page: its pages are under ${DASHBOARD_PAGES.join(", ")}${didYouMean(section, DASHBOARD_PAGES)}\n\n${USAGE}`,
    );
  return url.pathname + url.search;
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
