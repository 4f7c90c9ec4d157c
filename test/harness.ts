/** Starts a whole local Runlet (`runlet start`, exactly as `npm start` does) for end-to-end tests. */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort } from "../control-plane/cli/processes.ts";

export const ROOT = fileURLToPath(new URL("../", import.meta.url));
const BIN = join(ROOT, "bin/runlet.mjs");

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

/** Starts Runlet and resolves once it prints its ready line (bounded). */
export async function startRunlet(
  home: string,
  ports = undefined as Runlet["ports"] | undefined,
): Promise<Runlet> {
  const usedPorts = ports ?? (await freePorts());
  const env = runletEnv(home, usedPorts);
  const child = spawn(process.execPath, [BIN, "start", "--json"], {
    cwd: ROOT,
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
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
    child.once("exit", (code) => {
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
