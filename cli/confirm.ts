/**
 * The question a command asks before it destroys what cannot be had back (`apps delete`,
 * `tokens revoke`, `secrets delete`, `hosts revoke`, `keys retire`, `cancel`, `projects
 * delete`): on a terminal only, where a person typed the command, default No; `--yes` (`-y`)
 * skips it. Off a terminal (a script, a CI job, a pipe) nothing is asked, as before the
 * question came, so no script waits on an answer it cannot give.
 */
import { createInterface } from "node:readline";
import { CliError } from "./command.ts";

/** The option every such command takes. */
export const YES_OPTION = { yes: { type: "boolean", short: "y" } } as const;

/** Where the question goes and its answer comes from: the terminal, or a test's streams. */
export interface Terminal {
  input: NodeJS.ReadableStream & { isTTY?: boolean };
  output: NodeJS.WritableStream & { isTTY?: boolean };
  /** Where the question is written (stderr: stdout stays the command's answer, --json's too). */
  ask: NodeJS.WritableStream;
}

const processTerminal = (): Terminal => ({
  input: process.stdin,
  output: process.stdout,
  ask: process.stderr,
});

/** Whether a person is there to answer: stdin and stdout are both terminals. */
export const atTerminal = (io: Terminal = processTerminal()): boolean =>
  io.input.isTTY === true && io.output.isTTY === true;

/**
 * Asks `question` (which names what goes and what follows; a function when it needs the server's
 * word, asked only when there is someone to ask) with `[y/N]`, unless `yes` or off a terminal;
 * returns once the answer is yes, or throws a CliError saying nothing was done (`kept`: what
 * stays) for any other answer, an empty line and the end of input included.
 */
export async function confirmOrStop(
  question: string | (() => Promise<string>),
  kept: string,
  yes: unknown,
  io: Terminal = processTerminal(),
): Promise<void> {
  if (yes === true || !atTerminal(io)) return;
  const text = typeof question === "string" ? question : await question();
  if (await asked(text, io)) return;
  throw new CliError(`${kept} (you did not answer y; --yes answers for you)`);
}

/** The answer to one question: true for y or yes (any case). */
function asked(question: string, io: Terminal): Promise<boolean> {
  // Not in the terminal's raw mode: the terminal echoes the answer and Ctrl-C ends the command
  // (exit 130) as it does anywhere else in the CLI, before anything was done.
  const lines = createInterface({ input: io.input, terminal: false });
  io.ask.write(`${question} [y/N] `);
  return new Promise((resolve) => {
    let answer: string | undefined;
    lines.once("line", (line) => {
      answer = line;
      lines.close();
    });
    lines.once("close", () => {
      if (answer === undefined) io.ask.write("\n");
      resolve(/^\s*y(es)?\s*$/i.test(answer ?? ""));
    });
  });
}
