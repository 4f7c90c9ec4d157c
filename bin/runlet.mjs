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
const { main } = await import("../cli/main.ts");
process.exitCode = await main(process.argv.slice(2));
