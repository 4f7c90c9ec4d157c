/**
 * The processes of a replica's process group, read from /proc, for a graceful stop inside a
 * sandbox: the group holds the sandbox's own processes (bwrap's monitor, and the init of the
 * replica's pid namespace, which dies with it) beside the app's, and a SIGTERM to the whole
 * group killed bwrap, which took every process of the sandbox with it within milliseconds, so
 * an app never had its grace period (a Python server's SIGTERM handler was cut off after 20 ms).
 */
import { readdirSync, readFileSync } from "node:fs";

interface Member {
  pid: number;
  name: string;
}

/** `/proc/{pid}/stat`'s name and process group; undefined once the process is gone. */
function statOf(pid: number): { name: string; group: number } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // "pid (name) state ppid pgrp …": the name may hold spaces and parentheses.
    const close = stat.lastIndexOf(")");
    const [, , group] = stat.slice(close + 2).split(" ");
    return { name: stat.slice(stat.indexOf("(") + 1, close), group: Number(group) };
  } catch {
    return undefined;
  }
}

/** Every process of group `leader` now; empty where /proc cannot be read. */
function membersOf(leader: number): Member[] {
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return [];
  }
  const members: Member[] = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = statOf(Number(entry));
    if (stat?.group === leader) members.push({ pid: Number(entry), name: stat.name });
  }
  return members;
}

/**
 * Sends `signal` to every process of group `leader` but those named in `spared`; false when it
 * found none of the others (the caller then signals the group as a whole).
 */
export function signalMembers(
  leader: number,
  signal: NodeJS.Signals,
  spared: readonly string[],
): boolean {
  const others = membersOf(leader).filter((m) => !spared.includes(m.name));
  let sent = false;
  for (const { pid } of others) {
    try {
      process.kill(pid, signal);
      sent = true;
    } catch {
      // gone meanwhile
    }
  }
  return sent;
}
