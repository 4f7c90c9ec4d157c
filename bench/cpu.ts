/**
 * Where a benchmark's CPU went: the CPU time of each part of a running local Runlet, read from
 * `/proc` (Linux) before and after a phase, so a phase's cost can be told per run and per part —
 * the Worker's workerd, the worker's process (wrangler, the run API's pass-through), the runtime
 * host, the replicas, the control plane — beside the benchmark's own client. On a system without
 * `/proc` it reports nothing.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { processTree } from "../test/harness.ts";
import { ms, table } from "./stats.ts";

/** CPU milliseconds by part of the stack (and the benchmark's client). */
export type CpuByPart = Map<string, number>;

const CLIENT = "the benchmark's client (this process)";

/** Clock ticks per second of `/proc/{pid}/stat`'s times. */
const TICKS_PER_S = (() => {
  try {
    return Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
  } catch {
    return 100;
  }
})();

function cpuMsOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command (which may hold spaces), from field 3: utime is 14, stime 15.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_S;
  } catch {
    return 0; // gone meanwhile
  }
}

function commandOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ");
  } catch {
    return "";
  }
}

/**
 * The CPU used so far by each part of the stack under `root` (the `runlet start` process), whose
 * Worker listens on `apiPort` (a workerd there is wrangler's proxy, as under `runlet start
 * --inspect`; the other runs the Worker). Without `--inspect` the worker's Node process listens
 * there and passes each connection on to the Worker's workerd (cli/worker-direct.ts).
 */
export function cpuByPart(root: number, apiPort: number): CpuByPart {
  const parts: CpuByPart = new Map();
  if (!existsSync("/proc/self/stat")) return parts;
  const add = (part: string, ms: number) => parts.set(part, (parts.get(part) ?? 0) + ms);
  const pids = processTree(root);
  const hosts = pids.filter((pid) => commandOf(pid).includes("runtime-host/main.ts"));
  const replicas = new Set(hosts.flatMap((host) => processTree(host).filter((p) => p !== host)));
  for (const pid of pids) {
    const command = commandOf(pid);
    const part = replicas.has(pid)
      ? "the replicas (sandboxed, with their networks)"
      : hosts.includes(pid)
        ? "the runtime host"
        : command.includes("control-plane/server.ts")
          ? "the control plane"
          : command.includes("cli/worker-dev.ts")
            ? "the worker's process (wrangler; the run API's pass-through)"
            : command.includes("workerd")
              ? command.includes(`entry=127.0.0.1:${apiPort} `)
                ? "wrangler's proxy workerd (local only)"
                : "the Worker's workerd (routes, run shards)"
              : "supervision and tooling (runlet start, wrangler, esbuild)";
    add(part, cpuMsOf(pid));
  }
  const own = process.cpuUsage();
  add(CLIENT, (own.user + own.system) / 1000);
  return parts;
}

/** What each part used between two readings. */
export function cpuSpent(before: CpuByPart, after: CpuByPart): CpuByPart {
  const spent: CpuByPart = new Map();
  for (const [part, ms] of after) spent.set(part, Math.max(0, ms - (before.get(part) ?? 0)));
  return spent;
}

/** CPU milliseconds per run of each part. */
export function perRun(cpu: CpuByPart, runs: number): Record<string, number> {
  return Object.fromEntries([...cpu].map(([part, spent]) => [part, spent / runs]));
}

/** A table of parts by phases (each a title and its CPU per run), with the sum of every part. */
export function cpuTable(...phases: Array<[string, Record<string, number>]>): string {
  const parts = Object.keys(phases[0]?.[1] ?? {});
  const all = (of: Record<string, number>) => Object.values(of).reduce((a, b) => a + b, 0);
  return table(
    ["part", ...phases.map(([title]) => title)],
    [
      ...parts.map((part) => [part, ...phases.map(([, of]) => ms(of[part] ?? 0))]),
      ["all of it", ...phases.map(([, of]) => ms(all(of)))],
    ],
  );
}
