import { type ParseArgsConfig, parseArgs } from "node:util";
import { MAX_PAGE_SIZE } from "../common/page-size.ts";

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
    /** A refusal's own words, without what the command was doing (`message` has both). */
    readonly said?: string,
  ) {
    super(message);
  }
}

export const commonOptions = {
  help: { type: "boolean", short: "h" },
  json: { type: "boolean" },
} as const;

/**
 * An id that begins with a dash (a signing key's `kid` is base64url: one in 64 does) is a word,
 * not a cluster of short options: `keys retire -HkN…` was "unknown option '-H'". Such words (12
 * characters or more, as a kid's 16 are; no second dash in front) go after a `--`,
 * in their order; one that is the value of the string option before it
 * (`--idempotency-key -HkN…`) stays where it is.
 */
export function dashedIdsAsWords(
  argv: readonly string[],
  options: Record<string, { type: string; short?: string }> = {},
): string[] {
  const takesValue = new Set(
    Object.entries(options)
      .filter(([, o]) => o.type === "string")
      .flatMap(([name, o]) => [`--${name}`, ...(o.short ? [`-${o.short}`] : [])]),
  );
  const end = argv.indexOf("--");
  const before = end === -1 ? argv : argv.slice(0, end);
  const after = end === -1 ? [] : argv.slice(end + 1);
  const isId = (arg: string, i: number) =>
    /^-[A-Za-z0-9_][A-Za-z0-9_-]{10,}$/.test(arg) && !takesValue.has(before[i - 1] ?? "");
  const ids = before.filter(isId);
  if (ids.length === 0) return [...argv];
  return [...before.filter((arg, i) => !isId(arg, i)), "--", ...ids, ...after];
}

export function parse(cmd: Command, argv: string[]) {
  try {
    return parseArgs({
      args: dashedIdsAsWords(argv, { ...commonOptions, ...cmd.options }),
      options: { ...commonOptions, ...cmd.options },
      allowPositionals: true,
      strict: true,
    });
  } catch (err) {
    throw new CliError(`${parseError(err as Error)}\n\n${cmd.usage}`);
  }
}

/**
 * Refuses what a subcommand does not take: an option meant for another of its command's
 * subcommands (`tokens list --name ci`), or words after those it takes (`tokens revoke sa_1
 * sa_2` revoked sa_1 alone). Both were ignored, and a script's mistake went unseen.
 */
export function takesOnly(
  sub: string,
  given: { values: Record<string, unknown>; words: readonly string[] },
  takes: { options?: readonly string[]; words?: number },
  usage: string,
): void {
  const allowed = new Set(["help", "json", ...(takes.options ?? [])]);
  const extra = Object.keys(given.values).filter(
    (key) => given.values[key] !== undefined && !allowed.has(key),
  );
  if (extra.length > 0)
    throw new CliError(`${sub} takes no ${extra.map((k) => `--${k}`).join(", ")}\n\n${usage}`);
  const words = takes.words ?? 0;
  if (given.words.length > words)
    throw new CliError(
      `unexpected '${given.words.slice(words).join(" ")}' after ${sub}\n\n${usage}`,
    );
}

/**
 * node:util's words for a command line it refused, shorter where they were long: an unknown
 * option came with advice on '--' and an unmatched quote (`Unknown option '--yes'. To specify a
 * positional argument starting with a '-', ... as in '-- "--yes"`). An option without its value
 * is said in one line too: followed by another option (`runs --app $APP --json`, APP empty), it
 * read in three ("Option '--app' argument is ambiguous.\nDid you forget…"), a `--json` message
 * and a log line that README.md says are one line.
 */
function parseError(err: Error): string {
  const unknown = /^Unknown option '([^']+)'/.exec(err.message);
  if (unknown) return `unknown option '${unknown[1]}'`;
  const missing = /^Option '(?:-\w, )?(-[^' ]+)(?: <value>)?' argument (missing|is ambiguous)/.exec(
    err.message,
  );
  if (!missing) return err.message;
  const [, option, why] = missing;
  if (why === "missing") return `${option} needs a value`;
  const long = /use '(--[^=']+)=-XYZ'/.exec(err.message)?.[1] ?? option;
  return `${option} needs a value, and the word after it starts with a dash (a value that does is written ${long}=-value)`;
}

/** A duration as the CLI writes one (`30d`, `12h`, `90m`, `45s`) in milliseconds, else undefined. */
export function durationMs(text: string): number | undefined {
  const relative = /^(\d+)([smhd])$/.exec(text);
  if (!relative) return undefined;
  const unit = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[
    relative[2] as "s" | "m" | "h" | "d"
  ];
  return Number(relative[1]) * unit;
}

/**
 * `--limit` of a listing, entries per page, as the API takes it (1 to 200): `abc` or `0` went to
 * the server and came back as its 400.
 */
export function pageLimit(text: string): string {
  const takes = `a whole number from 1 to ${MAX_PAGE_SIZE}`;
  return String(wholeNumberFlag("--limit", text, 1, MAX_PAGE_SIZE, takes));
}

/**
 * A whole-number flag's value, from `least` to `most`, or a CliError in one line naming the flag
 * and what it `takes` (then `usage`, if given).
 */
export function wholeNumberFlag(
  flag: string,
  text: string,
  least: number,
  most: number,
  takes: string,
  usage?: string,
): number {
  const n = /^\d{1,9}$/.test(text) ? Number(text) : Number.NaN;
  if (!(n >= least && n <= most))
    throw new CliError(`${flag} takes ${takes} (got '${text}')${usage ? `\n\n${usage}` : ""}`);
  return n;
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}
