/**
 * One `runlet start` per home: two would share its database, its Durable Objects' state and its
 * hosts' folders, and the second would point `local.json` at its own ports. The first holds
 * `RUNLET_HOME/runlet.pid` (its pid) while it runs; a file left by one that died (its pid gone,
 * or now another program's) is taken over.
 */
import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from "node:fs";
import { join } from "node:path";
import { CliError } from "./command.ts";

/** Whether `pid` is a live `runlet start` (Linux: its command line; elsewhere: alive at all). */
function isRunletStart(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").includes("start");
  } catch {
    return true; // no /proc: alive is all there is to know
  }
}

/** Takes `home` for this process, released when it exits; throws if another start holds it. */
export function claimHome(home: string): void {
  const path = join(home, "runlet.pid");
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(path, "wx", 0o600);
      writeSync(fd, String(process.pid));
      closeSync(fd);
      process.on("exit", () => {
        try {
          if (readFileSync(path, "utf8") === String(process.pid)) unlinkSync(path);
        } catch {
          // gone already
        }
      });
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
    const holder = Number(readFileSync(path, "utf8").trim());
    if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && isRunletStart(holder))
      throw new CliError(
        `another runlet start (pid ${holder}) is using ${home}: stop it first (Ctrl-C where it runs), or give this one a home of its own (RUNLET_HOME)`,
      );
    unlinkSync(path); // left by a start that died
  }
  throw new CliError(`could not take ${path}: another runlet start is starting on the same home`);
}
