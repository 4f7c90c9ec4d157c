/**
 * What the CLI says of a server it cannot reach. "Is Runlet running (`npm start`)?" was said
 * also while it ran: a component killed under a command is restarted by `runlet start` within
 * seconds, and a command sent meanwhile was told to start what was running (seen with the
 * control plane SIGKILLed under `runlet deploy`). When the home's `runlet start` runs, it says so.
 */
import { join } from "node:path";
import { liveStart } from "./home-lock.ts";

const LOOPBACK = new Set(["127.0.0.1", "localhost", "[::1]"]);

/** `what` failed: `url`'s server did not answer; `home`: the CLI's RUNLET_HOME. */
export function unreachableMessage(what: string, url: string, home: string): string {
  const { origin, hostname } = new URL(url);
  const pid = LOOPBACK.has(hostname) ? liveStart(home) : undefined;
  const why =
    pid === undefined
      ? "is Runlet running (`npm start`)?"
      : `runlet start (pid ${pid}) runs on ${home}, so a component of it is likely restarting after it stopped: try again in a few seconds (what happened: ${join(home, "logs", "supervisor.log")})`;
  return `${what} failed: cannot reach ${origin} — ${why}`;
}
