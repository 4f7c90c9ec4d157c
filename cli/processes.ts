/**
 * Child processes of `runlet start`: each leads a process group of its own, writes to a log file,
 * is stopped within a bound, and has a pipe from this process as its stdin, which it watches
 * (common/parent-watch.ts): this process never writes to it nor closes it, so it closes only
 * when this process ends, however it ends — and the child then ends too.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:net";
import { ENV } from "../common/consts.ts";
import { DEFAULT_LOG_LIMITS, LogFile, type LogLimits } from "./log-files.ts";

export interface Managed {
  name: string;
  child: ChildProcess;
  log: LogFile;
  /** The last lines the process wrote, for an error report. */
  tail(): string[];
  /** Its exit: how it ended, as a phrase ("code 1", "signal SIGKILL", or why it did not start). */
  exited: Promise<string>;
  /** When it was started (ms since the epoch). */
  startedAt: number;
}

const TAIL_LINES = 30;

/**
 * Starts `command` in its own process group, its output to `logFile` (rotated by size:
 * log-files.ts), and to the console if `echo`.
 */
export function startProcess(
  name: string,
  command: string,
  args: string[],
  opts: {
    cwd: string;
    env: NodeJS.ProcessEnv;
    logFile: string;
    echo: boolean;
    logLimits?: LogLimits;
  },
): Managed {
  const log = new LogFile(opts.logFile, opts.logLimits ?? DEFAULT_LOG_LIMITS);
  const child = spawn(command, args, {
    cwd: opts.cwd,
    env: { ...opts.env, [ENV.supervised]: "1" },
    detached: true,
    stdio: ["pipe", "pipe", "pipe"],
  });
  // The child's watch pipe: kept open, never written to (see above).
  child.stdin?.on("error", () => {});
  const lines: string[] = [];
  const take = (from: "stdout" | "stderr") => (chunk: Buffer) => {
    log.write(chunk, from);
    for (const line of chunk.toString("utf8").split("\n")) {
      if (!line.trim()) continue;
      lines.push(line);
      if (lines.length > TAIL_LINES) lines.shift();
      if (opts.echo) process.stderr.write(`[${name}] ${line}\n`);
    }
  };
  child.stdout?.on("data", take("stdout"));
  child.stderr?.on("data", take("stderr"));
  const exited = new Promise<string>((resolve) => {
    child.once("exit", (code, signal) => resolve(signal ? `signal ${signal}` : `code ${code}`));
    child.once("error", (err) => {
      lines.push(String(err.message));
      resolve(`failed to start: ${err.message}`);
    });
  });
  return { name, child, log, tail: () => [...lines], exited, startedAt: Date.now() };
}

/** Sends `signal` to the process's whole group (what it started included); never throws. */
export function signalGroup(proc: Managed, signal: NodeJS.Signals) {
  if (proc.child.pid === undefined) return;
  try {
    process.kill(-proc.child.pid, signal);
  } catch {
    // the group is already gone
  }
}

/**
 * SIGTERM to the process, SIGKILL to its whole group after `graceMs` or once it has exited;
 * never throws. The SIGTERM goes to the process alone: it stops what it started in its own
 * order (the runtime host keeps its replicas' slirp4netns, in its group, through its grace; the
 * worker's process stops wrangler). `hurry` aborted sends it SIGTERM again (a second Ctrl-C:
 * the runtime host then ends its grace at once).
 */
export async function stopProcess(
  proc: Managed,
  graceMs = 5000,
  hurry?: AbortSignal,
): Promise<void> {
  if (proc.child.exitCode === null && proc.child.signalCode === null) {
    const term = () => proc.child.kill("SIGTERM");
    term();
    hurry?.addEventListener("abort", term, { once: true });
    const timer = setTimeout(() => signalGroup(proc, "SIGKILL"), graceMs);
    await proc.exited;
    clearTimeout(timer);
    hurry?.removeEventListener("abort", term);
  }
  // Grandchildren (workerd under wrangler) may outlive their parent: finish the group.
  signalGroup(proc, "SIGKILL");
  proc.child.stdin?.destroy();
  await proc.log.end();
}

/** True when nothing listens on `port` at `host`. */
export function portIsFree(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/** A port the OS says is free now (for wrangler's inspector and for tests). */
export function freePort(host = "127.0.0.1"): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen({ port: 0, host }, () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** Polls `url` until it answers 2xx, the process dies, or `timeoutMs` passes. */
export async function waitHealthy(
  url: string,
  proc: Managed,
  timeoutMs: number,
): Promise<"ready" | "exited" | "timeout"> {
  const deadline = Date.now() + timeoutMs;
  let dead = false;
  proc.exited.then(() => {
    dead = true;
  });
  while (Date.now() < deadline) {
    if (dead) return "exited";
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(1000) });
      if (res.ok) return "ready";
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 150));
  }
  return "timeout";
}
