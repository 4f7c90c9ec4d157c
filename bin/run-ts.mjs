#!/usr/bin/env node
// `node bin/run-ts.mjs <file.ts> [args…]`: how `runlet start` and `runlet host` run the
// control plane, the runtime host and the Worker's process, compiled as the CLI is
// (bin/compiled.mjs). The program sees itself as `node <file.ts> [args…]`.
import { resolve } from "node:path";
import { load } from "./compiled.mjs";

if (!process.argv[2]) {
  console.error("usage: node bin/run-ts.mjs <file.ts> [args…]");
  process.exit(2);
}
const entry = resolve(process.argv[2]);
process.argv.splice(1, 2, entry);
await load(entry);
