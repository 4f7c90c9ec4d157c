/**
 * A runtime host started for a test in a process of its own (`runlet host`, or
 * `runtime-host/main.ts` itself), its stdout and stderr kept together for the test's messages.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { ROOT } from "./harness.ts";

export interface HostProcess {
  child: ChildProcess;
  /** What it wrote so far, both streams. */
  readonly log: string;
}

/** Starts `command args` in the repository, with `env` over this process's environment. */
export function spawnHost(
  command: string,
  args: string[],
  env: Record<string, string>,
  detached = false,
): HostProcess {
  const child = spawn(command, args, {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
    detached,
  });
  let log = "";
  for (const stream of [child.stdout, child.stderr])
    stream?.on("data", (d) => {
      log += d;
    });
  return {
    child,
    get log() {
      return log;
    },
  };
}

/** Waits until the host says it listens; throws with its output if it exits or `ms` pass first. */
export async function hostListening(host: HostProcess, ms = 30_000): Promise<void> {
  const until = Date.now() + ms;
  while (!/runtime host listening/.test(host.log) && host.child.exitCode === null) {
    if (Date.now() > until) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  if (!/runtime host listening/.test(host.log))
    throw new Error(`the runtime host did not start:\n${host.log}`);
}
