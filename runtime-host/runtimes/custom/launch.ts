/**
 * How a custom app's process is started: the environment it gets, and the script its replica's
 * waiting shell runs to export it and exec the entrypoint.
 */
import { createServer } from "node:net";
import { LOOPBACK } from "../../../common/consts.ts";
import type { WorkloadSpec } from "../../pool/workload.ts";
import { managedEnv } from "../managed/launch.ts";

/**
 * The app's whole environment: a managed app's (its secrets, PATH, HOME, its names), `PORT`, and
 * `PYTHONUNBUFFERED=1`. Python buffers its stdout in blocks of 8 KiB when it is a pipe, as it is
 * here, so a Python server's `print()` reached `runlet logs --app` only when 8 KiB had piled up
 * or the process exited, and never if it was killed. A secret of that name replaces it.
 */
export function customEnv(
  spec: WorkloadSpec,
  appDir: string,
  secrets: Record<string, string>,
  port: number,
): NodeJS.ProcessEnv {
  return { PYTHONUNBUFFERED: "1", ...managedEnv(spec, appDir, secrets), PORT: String(port) };
}

/** `word` as one single-quoted shell word. */
function shellWord(word: string): string {
  return `'${word.replaceAll("'", "'\\''")}'`;
}

/**
 * What the replica's waiting shell runs: export the app's environment, then exec its
 * entrypoint (looked up on PATH, as a spawn would). Sent over stdin, so secrets never touch a
 * file; the entrypoint keeps the sandbox's process, limits and cgroup.
 */
export function launchScript(env: NodeJS.ProcessEnv, entrypoint: readonly string[]): string {
  const exports = Object.entries(env).flatMap(([name, value]) =>
    value === undefined ? [] : [`export ${shellWord(`${name}=${value}`)}\n`],
  );
  return `${exports.join("")}exec ${entrypoint.map(shellWord).join(" ")}\n`;
}

/** A loopback port nothing listens on now, for a replica to take. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, LOOPBACK, () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
