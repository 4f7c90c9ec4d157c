import { type ParseArgsConfig, parseArgs } from "node:util";

/** A CLI command: its usage text, its options, and what it does. Returns the exit code. */
export interface Command {
  name: string;
  summary: string;
  usage: string;
  options: NonNullable<ParseArgsConfig["options"]>;
  run(args: {
    values: Record<string, string | boolean | undefined>;
    positionals: string[];
  }): Promise<number>;
}

/**
 * A failure the user can act on: printed as one line, exit code 1, no stack; with `--json`,
 * as `{message, status?, code?}` on stdout (the server's status and code when it refused).
 */
export class CliError extends Error {
  constructor(
    message: string,
    readonly answer?: { status: number; code?: string },
  ) {
    super(message);
  }
}

export const commonOptions = {
  help: { type: "boolean", short: "h" },
  json: { type: "boolean" },
} as const;

export function parse(cmd: Command, argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      options: { ...commonOptions, ...cmd.options },
      allowPositionals: true,
      strict: true,
    });
  } catch (err) {
    throw new CliError(`${parseError(err as Error)}\n\n${cmd.usage}`);
  }
}

/**
 * node:util's words for a command line it refused, shorter where they were long: an unknown
 * option came with advice on '--' and an unmatched quote (`Unknown option '--yes'. To specify a
 * positional argument starting with a '-', ... as in '-- "--yes"`).
 */
function parseError(err: Error): string {
  const unknown = /^Unknown option '([^']+)'/.exec(err.message);
  return unknown ? `unknown option '${unknown[1]}'` : err.message;
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}
