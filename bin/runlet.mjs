#!/usr/bin/env node
// The `runlet` command. TypeScript sources run through tsx's loader; no build step.
let register;
try {
  ({ register } = await import("tsx/esm/api"));
} catch {
  console.error(
    "runlet: its dependencies are not installed: run `npm install` in the Runlet folder first.",
  );
  process.exit(1);
}
register();
// A reader that goes away (`runlet logs … | head`) ends the output, not the command with a
// stack trace: a deploy piped into `head` stopped half-way, its progress line unwritable.
for (const stream of [process.stdout, process.stderr])
  stream.on("error", (err) => {
    if (err.code !== "EPIPE") throw err;
  });
const { main } = await import("../cli/main.ts");
process.exitCode = await main(process.argv.slice(2));
