/**
 * The local Worker of `runlet start`: wrangler's own dev server — the one `wrangler dev` runs:
 * workerd, the Durable Objects, local persistence — started through wrangler's programmatic
 * API, because that one can leave the devtools inspector off. With the inspector on, every
 * request the Worker sends out (to the runtime host, the control plane) took about 3 ms more;
 * see docs/benchmarks.md. `runlet start --inspect` runs the `wrangler dev` command instead.
 *
 *   node --import tsx cli/worker-dev.ts --config wrangler.toml --ip 127.0.0.1
 *     --port 8787 --env-file vars.env --persist-to dir [--log-level warn]
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { unstable_startWorker } from "wrangler";

const { values } = parseArgs({
  options: {
    config: { type: "string" },
    ip: { type: "string" },
    port: { type: "string" },
    "env-file": { type: "string" },
    "persist-to": { type: "string" },
    "log-level": { type: "string", default: "warn" },
  },
});
const missing = ["config", "ip", "port", "env-file", "persist-to"].filter(
  (name) => values[name as keyof typeof values] === undefined,
);
if (missing.length) {
  console.error(`worker-dev: missing --${missing.join(", --")}`);
  process.exit(2);
}

/** Variables whose values are secrets. */
const SECRETS = new Set(["INTERNAL_TOKEN"]);

/** `NAME=value` lines (the file `runlet start` writes, mode 0600) as text bindings. */
function varsOf(file: string) {
  const bindings: Record<string, { type: "plain_text" | "secret_text"; value: string }> = {};
  for (const line of readFileSync(file, "utf8").split("\n")) {
    const at = line.indexOf("=");
    if (at <= 0) continue;
    const name = line.slice(0, at);
    // A secret's value stays out of wrangler's table of bindings (and so out of the logs).
    const type = SECRETS.has(name) ? "secret_text" : "plain_text";
    bindings[name] = { type, value: line.slice(at + 1) };
  }
  return bindings;
}

const worker = await unstable_startWorker({
  config: values.config,
  // The top-level Worker; `--env control-plane` is the control plane on Workers + D1.
  env: "",
  bindings: varsOf(values["env-file"] as string),
  dev: {
    inspector: false,
    server: { hostname: values.ip, port: Number(values.port) },
    persist: values["persist-to"],
    logLevel: values["log-level"] as "warn",
    watch: false,
  },
});
await worker.ready;
console.log(`worker listening on http://${values.ip}:${values.port}`);

let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  worker.dispose().then(
    () => process.exit(0),
    () => process.exit(1),
  );
};
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
