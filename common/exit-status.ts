/**
 * How a process ended, for people: `signal SIGTERM`, `code 3`. A sandboxed process's own death
 * by a signal reaches the host as bwrap's exit code 128 + the signal, which is named too. The
 * runtime host's messages use it, and so do the CLI and the dashboard for a replica's end.
 */
import { constants } from "node:os";

export function exitOf({ code, signal }: { code: number | null; signal: string | null }): string {
  if (signal) return `signal ${signal}`;
  if (code === null) return "no exit status";
  const name = code > 128 ? signalNames.get(code - 128) : undefined;
  return name ? `code ${code}: 128 + ${name}` : `code ${code}`;
}

/** Each signal's first name (SIGABRT, not its alias SIGIOT). */
const signalNames = new Map(
  Object.entries(constants.signals)
    .reverse()
    .map(([name, n]) => [n, name]),
);
