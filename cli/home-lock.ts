/**
 * One `runlet start` per home: two would share its database, its Durable Objects' state and its
 * hosts' folders, and the second would point `local.json` at its own ports. A `runlet host` takes
 * its home the same way: one started beside a `runlet start` in the same checkout (both `.runlet`)
 * cleared that start's host's spare folders as it started, and that host's next cold start failed
 * ("the app has neither main.mjs nor main.js"). The first holds
 * `RUNLET_HOME/runlet.pid` (its pid, and the home's real path) while it runs; a file left by one
 * that died (its pid gone, or now another program's) is taken over, and so is one copied with the
 * home (a backup of a running home, restored elsewhere: its path names the home it came from).
 */
import { closeSync, openSync, readFileSync, realpathSync, unlinkSync, writeSync } from "node:fs";
import { join } from "node:path";
import { CliError } from "./command.ts";

/**
 * Which of `runlet start` and `runlet host` the live process `pid` is, by its command line
 * (Linux; elsewhere a live one is taken for a start); undefined when it is neither.
 */
function runletCommand(pid: number): "start" | "host" | undefined {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EPERM") return undefined;
  }
  let args: string[];
  try {
    args = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
  } catch {
    return "start"; // no /proc: alive is all there is to know
  }
  return args.includes("start") ? "start" : args.includes("host") ? "host" : undefined;
}

/** The live `runlet start` or `runlet host` other than this process that holds `home`, if any. */
function holderOf(home: string): { pid: number; command: "start" | "host" } | undefined {
  let text: string;
  try {
    text = readFileSync(join(home, "runlet.pid"), "utf8");
  } catch {
    return undefined; // no pid file (or no home yet): nobody holds it
  }
  const [pid, held] = text.split("\n");
  const holder = Number(pid);
  // No path: written before the path was; its pid is all there is to go by.
  const here = held === undefined || held === "" || held === realpathSync(home);
  const command =
    here && Number.isInteger(holder) && holder > 0 && holder !== process.pid
      ? runletCommand(holder)
      : undefined;
  return command ? { pid: holder, command } : undefined;
}

const heldBy = (home: string, holder: { pid: number; command: string }) =>
  new CliError(
    `another runlet ${holder.command} (pid ${holder.pid}) is using ${home}: stop it first (Ctrl-C where it runs), or give this one a home of its own (RUNLET_HOME)`,
  );

/**
 * Refuses `home` if a live runlet holds it, without taking it: `runlet start` asks before it
 * checks its ports, since a second start on the same home and ports (npm start run twice) found
 * its ports taken by the first and said to set RUNLET_CONTROL_PORT to a free one, which led
 * only to this refusal.
 */
export function refuseHeldHome(home: string): void {
  const holder = holderOf(home);
  if (holder) throw heldBy(home, holder);
}

/**
 * The pid of the `runlet start` that holds `home` and still runs, if one does: a component of
 * it that does not answer is being restarted (or has just died), not "not running".
 */
export function liveStart(home: string): number | undefined {
  const holder = holderOf(home);
  return holder?.command === "start" ? holder.pid : undefined;
}

/** Takes `home` for this process, released when it exits; throws if another start holds it. */
export function claimHome(home: string): void {
  const path = join(home, "runlet.pid");
  const real = realpathSync(home);
  const mine = `${process.pid}\n${real}\n`;
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(path, "wx", 0o600);
      writeSync(fd, mine);
      closeSync(fd);
      process.on("exit", () => {
        try {
          if (readFileSync(path, "utf8") === mine) unlinkSync(path);
        } catch {
          // gone already
        }
      });
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
    const holder = holderOf(home);
    if (holder) throw heldBy(home, holder);
    unlinkSync(path); // left by a start that died
  }
  throw new CliError(`could not take ${path}: another runlet is starting on the same home`);
}
