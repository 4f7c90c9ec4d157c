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
    throw new CliError(`${(err as Error).message}\n\n${cmd.usage}`);
  }
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}
