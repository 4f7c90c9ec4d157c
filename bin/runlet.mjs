#!/usr/bin/env node
// The `runlet` command: the CLI's TypeScript compiled into one cached module, or its sources
// run through tsx where that cannot be had or RUNLET_FROM_SOURCE=1 asks (bin/compiled.mjs).
import { fileURLToPath } from "node:url";
import { setFlagsFromString } from "node:v8";
import { load } from "./compiled.mjs";

// Node's fetch parses HTTP with a WebAssembly module, which V8 compiles again, optimized, in the
// background; a process waits for that before it exits: about 0.1 s added to every command that
// called the API (runlet apps: 0.41 s, 0.36 s with this). A command makes a few requests: the
// baseline compile is enough.
setFlagsFromString("--liftoff-only");

// A reader that goes away (`runlet logs … | head`) ends the output, not the command with a
// stack trace: a deploy piped into `head` stopped half-way, its progress line unwritable.
for (const stream of [process.stdout, process.stderr])
  stream.on("error", (err) => {
    if (err.code !== "EPIPE") throw err;
  });

const { main } = await load(fileURLToPath(new URL("../cli/main.ts", import.meta.url)));
process.exitCode = await main(process.argv.slice(2));
