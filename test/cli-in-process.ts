/**
 * The CLI's `main` run in this test process, for end-to-end files that run many commands: a
 * spawned `runlet` is a Node process loading the compiled CLI, about 0.35 s of CPU each, and
 * cli.test.ts ran about a hundred. What it prints is captured as the process would have
 * printed it (each console line ending in a newline, what is written to stdout and stderr as is).
 * The binary itself (bin/runlet.mjs, its exit codes, a command's standard input) is what
 * harness.ts's `cli` runs. cli/commands/test-support.ts's `runlet` runs `main` here too for the
 * command tests, with its lines joined without the last newline and the progress apart; this one
 * prints as the binary does, so assertions written for the binary hold.
 */
import { format } from "node:util";
import { vi } from "vitest";
import { main } from "../cli/main.ts";

/** Runs `runlet ARGS` here with `env` as its environment (over this process's); not concurrently. */
export async function cliInProcess(
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  const spies = [
    vi.spyOn(console, "log").mockImplementation((...line) => {
      stdout += `${format(...line)}\n`;
    }),
    vi.spyOn(console, "error").mockImplementation((...line) => {
      stderr += `${format(...line)}\n`;
    }),
    // What a command streams (an export to standard output) and its progress on stderr.
    vi.spyOn(process.stdout, "write").mockImplementation((chunk) => {
      stdout += typeof chunk === "string" ? chunk : Buffer.from(chunk).toString("utf8");
      return true;
    }),
    vi.spyOn(process.stderr, "write").mockImplementation((chunk) => {
      stderr += typeof chunk === "string" ? chunk : Buffer.from(chunk).toString("utf8");
      return true;
    }),
  ];
  for (const [name, value] of Object.entries(env)) vi.stubEnv(name, value);
  try {
    return { code: await main(args), stdout, stderr };
  } finally {
    vi.unstubAllEnvs();
    for (const spy of spies) spy.mockRestore();
  }
}
