/**
 * A component started by `runlet start` (or the runtime host of `runlet host`) ends when its
 * supervisor is gone, however it went (Ctrl-C, a crash, SIGKILL, the OOM killer): the supervisor
 * gives each component a pipe as its stdin, never writes to it and never closes it. The kernel
 * closes the supervisor's end when its process ends, whatever ended it, and the component then
 * reads the end of the stream.
 *
 * `RUNLET_SUPERVISED=1` says stdin is that pipe; without it (a component started by hand, in a
 * test) nothing is watched. Node only: the control plane and the runtime host call it from their
 * entries, the Worker never imports it.
 */
import { ENV } from "./consts.ts";

/**
 * Calls `onGone` once when the supervisor's pipe closes. Returns false when the process was not
 * started by a supervisor. The watch never keeps the process alive by itself.
 */
export function watchSupervisor(onGone: () => void, env: NodeJS.ProcessEnv = process.env): boolean {
  if (env[ENV.supervised] !== "1") return false;
  // Children of this process are not supervised through this pipe (nor given it: their stdin is
  // their own), so they must not read the flag.
  delete env[ENV.supervised];
  const stdin = process.stdin;
  let gone = false;
  const once = () => {
    if (gone) return;
    gone = true;
    // stdout and stderr may have gone to the supervisor too (`runlet start`'s do): writing there
    // now fails (EPIPE), harmlessly.
    for (const out of [process.stdout, process.stderr]) out.on("error", () => {});
    onGone();
  };
  stdin.on("end", once);
  stdin.on("close", once);
  stdin.on("error", once);
  stdin.resume(); // nothing is ever written; reading is how the end is seen
  (stdin as { unref?: () => void }).unref?.();
  return true;
}

/**
 * Ends the process `ms` after this is called, even if a graceful stop hangs. The timer does not
 * keep the process alive.
 */
export function exitWithin(ms: number, code = 1): void {
  setTimeout(() => process.exit(code), ms).unref();
}
