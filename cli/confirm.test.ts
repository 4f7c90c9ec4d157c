// The question before a command destroys something: asked on a terminal only, default No,
// skipped by --yes; a script's streams (not terminals) are never asked.
import { PassThrough } from "node:stream";
import { expect, it } from "vitest";
import { CliError } from "./command.ts";
import { confirmOrStop, type Terminal } from "./confirm.ts";

/** Streams that say they are terminals (or not), the answer typed in advance. */
function terminal(typed: string | null, tty = { input: true, output: true }) {
  const input = Object.assign(new PassThrough(), { isTTY: tty.input });
  const output = Object.assign(new PassThrough(), { isTTY: tty.output });
  const ask = new PassThrough();
  let asked = "";
  ask.on("data", (d) => (asked += d));
  if (typed === null) input.end();
  else input.write(typed);
  const io: Terminal = { input, output, ask };
  return { io, asked: () => asked };
}

const outcome = (p: Promise<void>) =>
  p.then(
    () => "went on",
    (err: unknown) => (err instanceof CliError ? err.message : `threw ${err}`),
  );

it("goes on when the person answers y or yes, after asking with [y/N]", async () => {
  for (const typed of ["y\n", "Y\n", "yes\n", " YES \n"]) {
    const t = terminal(typed);
    expect(await outcome(confirmOrStop("Delete app hello?", "Kept hello", false, t.io))).toBe(
      "went on",
    );
    expect(t.asked()).toBe("Delete app hello? [y/N] ");
  }
});

it("stops, saying nothing was done, for no, an empty line (the default) or the end of input", async () => {
  for (const typed of ["n\n", "\n", "nope\n", "yes please\n", null]) {
    const t = terminal(typed);
    expect(await outcome(confirmOrStop("Delete app hello?", "Kept hello", undefined, t.io))).toBe(
      "Kept hello (you did not answer y; --yes answers for you)",
    );
  }
});

it("asks nothing with --yes, nor where stdin or stdout is not a terminal (a script)", async () => {
  let built = 0;
  const question = async () => {
    built++;
    return "Delete app hello?";
  };
  for (const [yes, tty] of [
    [true, { input: true, output: true }],
    [undefined, { input: false, output: true }],
    [undefined, { input: true, output: false }],
    [undefined, { input: false, output: false }],
  ] as const) {
    // Nothing typed: a question asked would be answered No by the end of input.
    const t = terminal(null, tty);
    expect(await outcome(confirmOrStop(question, "Kept hello", yes, t.io))).toBe("went on");
    expect(t.asked()).toBe("");
  }
  // Its words were not even asked of the server.
  expect(built).toBe(0);
});
