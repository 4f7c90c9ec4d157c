/** Starts a whole local Runlet (`runlet start`, exactly as `npm start` does) for end-to-end tests. */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort, portIsFree } from "../cli/processes.ts";
import { childrenOf } from "../cli/worker-watch.ts";

export const ROOT = fileURLToPath(new URL("../", import.meta.url));
export const BIN = join(ROOT, "bin/runlet.mjs");

export interface Runlet {
  home: string;
  env: NodeJS.ProcessEnv;
  ports: { control: number; api: number; host: number };
  local: { baseUrl: string; apiUrl: string; projectId: string; token: string };
  process: ChildProcess;
  output(): string;
  stop(): Promise<number | null>;
}

export async function newHome(): Promise<string> {
  return mkdtemp(join(tmpdir(), "runlet-e2e-"));
}

export async function freePorts() {
  return { control: await freePort(), api: await freePort(), host: await freePort() };
}

export function runletEnv(
  home: string,
  ports: { control: number; api: number; host: number },
): NodeJS.ProcessEnv {
  return {
    ...process.env,
    RUNLET_HOME: home,
    RUNLET_CONTROL_PORT: String(ports.control),
    RUNLET_API_PORT: String(ports.api),
    RUNLET_HOST_PORT: String(ports.host),
  };
}

/**
 * Starts Runlet and resolves once it prints its ready line (bounded). It is supervised by this
 * process (README: `RUNLET_SUPERVISED`): a test process that ends, however, takes the stack with it.
 */
export async function startRunlet(
  home: string,
  ports = undefined as Runlet["ports"] | undefined,
  extraEnv: NodeJS.ProcessEnv = {},
): Promise<Runlet> {
  const usedPorts = ports ?? (await freePorts());
  const env = { ...runletEnv(home, usedPorts), ...extraEnv };
  const child = spawn(process.execPath, [BIN, "start", "--json"], {
    cwd: ROOT,
    env: { ...env, RUNLET_SUPERVISED: "1" },
    stdio: ["pipe", "pipe", "pipe"],
  });
  // The supervisor's pipe: never written to, closed only when this process ends.
  child.stdin.on("error", () => {});
  let output = "";
  child.stdout.on("data", (d) => {
    output += d;
  });
  child.stderr.on("data", (d) => {
    output += d;
  });
  const exited = new Promise<number | null>((resolve) =>
    child.once("exit", (code) => resolve(code)),
  );
  const deadline = Date.now() + 100_000;
  while (!output.includes('"ready":true')) {
    if (child.exitCode !== null)
      throw new Error(`runlet start exited ${child.exitCode}:\n${output}`);
    if (Date.now() > deadline) {
      child.kill("SIGTERM");
      throw new Error(`runlet start was not ready in time:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  const local = JSON.parse(await readFile(join(home, "local.json"), "utf8"));
  return {
    home,
    env,
    ports: usedPorts,
    local,
    process: child,
    output: () => output,
    async stop() {
      if (child.exitCode === null) child.kill("SIGTERM");
      return exited;
    },
  };
}

/** Runs the CLI to completion, with `input` on its stdin if given; bounded. */
export function cli(
  args: string[],
  env: NodeJS.ProcessEnv,
  input?: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: ROOT,
      env,
      stdio: [input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
    });
    if (input !== undefined) child.stdin?.end(input);
    let stdout = "";
    let stderr = "";
    child.stdout?.on("data", (d) => {
      stdout += d;
    });
    child.stderr?.on("data", (d) => {
      stderr += d;
    });
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`runlet ${args.join(" ")} timed out\n${stdout}\n${stderr}`));
    }, 60_000);
    // "close", not "exit": at "exit" the output may still be in its pipes (a busy machine lost a
    // command's whole stdout that way).
    child.once("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

export async function removeHome(home: string) {
  await rm(home, { recursive: true, force: true });
}

// biome-ignore lint/suspicious/noExplicitAny: test bodies are probed field by field by the assertions.
export type Json = Record<string, any>;

export async function json(res: Response): Promise<Json> {
  return (await res.json()) as Json;
}

/** `root` and every process under it, parents first (Linux /proc: see `childrenOf`). */
export function processTree(root: number): number[] {
  const found: number[] = [];
  const todo = [root];
  while (todo.length) {
    const pid = todo.shift() as number; // breadth first: a parent before its children
    if (found.includes(pid) || !isAlive(pid)) continue;
    found.push(pid);
    todo.push(...childrenOf(pid));
  }
  return found;
}

/** True while `pid` exists and is not a zombie. */
export function isAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}

/**
 * A hard crash of the whole stack: every process of `runlet` (`runlet start` and all it started,
 * whatever their process group) is frozen (SIGSTOP, so none starts another meanwhile), then all
 * get SIGKILL at once. Resolves with their pids once every one is gone (bounded).
 */
export async function killStack(runlet: Runlet): Promise<number[]> {
  const root = runlet.process.pid as number;
  const frozen = new Set<number>();
  for (let round = 0; round < 20; round++) {
    const fresh = processTree(root).filter((pid) => !frozen.has(pid));
    if (fresh.length === 0) break;
    for (const pid of fresh) {
      try {
        process.kill(pid, "SIGSTOP");
        frozen.add(pid);
      } catch {
        // already gone
      }
    }
  }
  for (const pid of frozen) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
  const deadline = Date.now() + 15_000;
  while ([...frozen].some(isAlive)) {
    if (Date.now() > deadline)
      throw new Error(`still alive after SIGKILL: ${[...frozen].filter(isAlive).join(", ")}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  await runlet.stop(); // its exit is seen (and reaped) by this process
  return [...frozen];
}

/** Processes (other than this one) whose command line or working folder mention `home` or one of `ports`. */
export function processesOf(home: string, ports: Runlet["ports"]): string[] {
  const portRe = new RegExp(`(^|[^0-9])(${Object.values(ports).join("|")})([^0-9]|$)`);
  const found: string[] = [];
  for (const entry of readdirSync("/proc")) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid || !isAlive(pid)) continue;
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ").trim();
      let cwd = "";
      try {
        cwd = readlinkSync(`/proc/${pid}/cwd`);
      } catch {
        // not ours to read, or gone
      }
      if (cmd.includes(home) || cwd.startsWith(home) || portRe.test(cmd))
        found.push(`${pid} (cwd ${cwd}): ${cmd.slice(0, 300)}`);
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/** Resolves once nothing listens on any of `ports` on loopback (bounded). */
export async function portsFree(ports: Runlet["ports"], timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const taken: number[] = [];
    for (const port of Object.values(ports))
      if (!(await portIsFree(port, "127.0.0.1"))) taken.push(port);
    if (taken.length === 0) return;
    if (Date.now() > deadline) throw new Error(`ports still in use: ${taken.join(", ")}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * The pid listening on TCP `port` (iproute2's ss), or undefined. ss names every process that
 * holds the socket, the newest first: a child the listener has just forked holds it until its
 * exec, and a runtime host forks often (spares, replicas). The first was taken, and a test
 * signalled a child that had ended since (kill ESRCH): now the holder that is no other's child.
 */
export function pidOnPort(port: string | number): number | undefined {
  const out = execFileSync("ss", ["-ltnpH", `sport = :${port}`], { encoding: "utf8" });
  const holders = [...out.matchAll(/pid=(\d+)/g)].map((m) => Number(m[1]));
  const children = new Set(holders.flatMap(childrenOf));
  return holders.find((pid) => !children.has(pid) && isAlive(pid));
}

/**
 * The registry id of the runtime host that ran `runId`, once the runs index has it: the host
 * reports a run a moment after its answer (bounded, 5 s).
 */
export async function hostOfRun(runlet: Runlet, runId: string): Promise<string> {
  const { baseUrl, projectId, token } = runlet.local;
  for (let i = 0; i < 50; i++) {
    const res = await fetch(`${baseUrl}/v2/projects/${projectId}/runs/${runId}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    const run = (await json(res)) as { host?: string | null };
    if (res.ok && run.host) return run.host;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`run ${runId} has no host in the runs index`);
}
