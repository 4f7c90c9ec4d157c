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
 * file; the entrypoint keeps the sandbox's process, limits and cgroup. A program that cannot
 * run is said in the app's words (`[custom] entrypoint`), not the shell's: the shell's
 * `sh: 14: exec: python: not found` counted the lines of this script. `python` runs `python3`
 * where there is no `python` (as Debian's python-is-python3 does; docs/api.md says why).
 */
export function launchScript(env: NodeJS.ProcessEnv, entrypoint: readonly string[]): string {
  const exports = Object.entries(env).flatMap(([name, value]) =>
    value === undefined ? [] : [`export ${shellWord(`${name}=${value}`)}\n`],
  );
  const [program = "", ...args] = entrypoint;
  const rest = args.map((a) => ` ${shellWord(a)}`).join("");
  const python3 =
    program === "python"
      ? `if ! command -v python >/dev/null 2>&1 && command -v python3 >/dev/null 2>&1; then exec python3${rest}; fi\n`
      : "";
  return `${exports.join("")}${python3}${cannotRun(program)}exec ${shellWord(program)}${rest}\n`;
}

/** Shell lines that end the replica, saying why, if `program` cannot be run. */
function cannotRun(program: string): string {
  const word = shellWord(program);
  const said = `[custom] entrypoint: '${program}'`;
  const fail = (why: string, code: number) =>
    `{ printf '%s\\n' ${shellWord(`${said} ${why}`)} >&2; exit ${code}; }\n`;
  if (!program.includes("/")) {
    // Not the PATH itself: the caller's 502 quotes this, and it is the host's.
    const notFound = fail("is not a program on the replica's PATH (the host's)", 127);
    return `command -v ${word} >/dev/null 2>&1 || ${notFound}`;
  }
  const where = program.startsWith("/")
    ? "does not exist in the sandbox"
    : "is not in the app's folder";
  const notRunnable =
    "is not an executable file: deploy it with its x bit (chmod +x), or name its interpreter first";
  return `[ -e ${word} ] || ${fail(where, 127)}[ -f ${word} ] && [ -x ${word} ] || ${fail(notRunnable, 126)}`;
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
