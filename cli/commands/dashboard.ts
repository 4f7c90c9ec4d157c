import { spawn } from "node:child_process";
import type { Command } from "../command.ts";
import { callProject, loadConfig } from "../config.ts";

const USAGE = `Usage: runlet dashboard [--no-open] [--json]

Prints a one-time sign-in link to the project's dashboard and opens it in a browser when this
machine has one. The link works once, for 5 minutes; the session it opens lasts 12 hours at
most, and ends when the token that asked for the link is revoked.

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

export const dashboard: Command = {
  name: "dashboard",
  summary: "print (and open) a one-time sign-in link to the dashboard",
  usage: USAGE,
  options: { "no-open": { type: "boolean" } },
  async run({ values }) {
    const config = await loadConfig();
    const link = await callProject<{ url: string; expiresAt: string }>(
      config,
      "POST",
      "/dashboard-links",
      "making a sign-in link",
    );
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
