/**
 * The local Worker of `runlet start`: wrangler's own dev server — the one `wrangler dev` runs:
 * workerd, the Durable Objects, local persistence — started through wrangler's programmatic
 * API, because that one can leave the devtools inspector off. With the inspector on, every
 * request the Worker sends out (to the runtime host, the control plane) took about 3 ms more;
 * see docs/benchmarks.md. The run API's port is passed straight to the Worker's workerd, not to
 * wrangler's proxy in front of it (worker-direct.ts), unless requests are logged (`--log-level
 * info`). With `--inspect` this runs the `wrangler dev` command as its child instead (inspector
 * on, and wrangler's proxy).
 *
 *   node bin/run-ts.mjs cli/worker-dev.ts --config wrangler.toml --ip 127.0.0.1 --port 8787
 *     --env-file vars.env --persist-to dir [--log-level warn] [--inspect --inspector-port N]
 *
 * wrangler and workerd are not ours to change, so this process watches over them: `runlet
 * start` makes it lead a process group, which everything wrangler starts (workerd) joins. When
 * its supervisor is gone, however it went (common/parent-watch.ts), it stops wrangler and then
 * kills the whole group, so no workerd outlives `runlet start` holding its port. It does the
 * same when a workerd dies or the Worker stops answering (wrangler would go on without it,
 * every request refused or hung; see worker-watch.ts), so that `runlet start` restarts it.
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { watchSupervisor } from "../common/parent-watch.ts";
import { directPort } from "./worker-direct.ts";
import { watchAnswers, watchDescendants } from "./worker-watch.ts";

// Required, not imported: wrangler is one large CommonJS file, and an import makes Node scan
// it for its named exports first. That scan was 40-55% of loading it (2.4-2.8 s against
// 4.7-6.5 s on a loaded 2-core machine), and loading wrangler is most of a local start.
const { unstable_DevEnv } = createRequire(import.meta.url)("wrangler") as typeof import("wrangler");

const { values } = parseArgs({
  options: {
    config: { type: "string" },
    ip: { type: "string" },
    port: { type: "string" },
    "env-file": { type: "string" },
    "persist-to": { type: "string" },
    "log-level": { type: "string", default: "warn" },
    inspect: { type: "boolean", default: false },
    "inspector-port": { type: "string" },
  },
});
const missing = ["config", "ip", "port", "env-file", "persist-to"].filter(
  (name) => values[name as keyof typeof values] === undefined,
);
if (missing.length) {
  console.error(`worker-dev: missing --${missing.join(", --")}`);
  process.exit(2);
}

/** How long wrangler gets to stop, once this process is to end, before its group is killed. */
const END_GRACE_MS = 2_000;

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

/** Starts wrangler; resolves with how to stop it. */
async function startWrangler(): Promise<() => Promise<void>> {
  if (values.inspect) {
    const wrangler = fileURLToPath(
      new URL("../node_modules/wrangler/bin/wrangler.js", import.meta.url),
    );
    const child = spawn(
      process.execPath,
      [
        wrangler,
        "dev",
        // The top-level Worker; `--env control-plane` is the control plane on Workers + D1.
        "--env=",
        ...(values["inspector-port"] ? ["--inspector-port", values["inspector-port"]] : []),
        "--show-interactive-dev-session=false",
        ...["--config", values.config as string, "--ip", values.ip as string],
        ...["--port", values.port as string, "--env-file", values["env-file"] as string],
        ...["--persist-to", values["persist-to"] as string, `--log-level=${values["log-level"]}`],
      ],
      { stdio: ["ignore", "inherit", "inherit"] },
    );
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    // wrangler ending by itself ends this process: `runlet start` sees the worker stop.
    child.once("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
    return async () => {
      child.kill("SIGTERM");
      await exited;
    };
  }
  // wrangler's dev server with the run API's port passed straight to the Worker's workerd, not
  // to wrangler's proxy in front of it (worker-direct.ts). That proxy is what logs a line per
  // request (`--log-level info`: `runlet start --verbose`), so then it stays.
  const perRequest = ["info", "log", "debug"].includes(values["log-level"] as string);
  const direct = () => directPort(values.ip as string, Number(values.port)) as never;
  const devEnv = new unstable_DevEnv(perRequest ? {} : { proxyFactory: direct });
  const worker = await devEnv.startWorker({
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
  return () => worker.dispose();
}

/** Kills this process's whole group (wrangler, workerd, this process). */
function killGroup(): never {
  try {
    process.kill(-process.pid, "SIGKILL");
  } catch {
    // Not a group leader (started by hand): only this process ends.
  }
  process.exit(1);
}

let stopWrangler: (() => Promise<void>) | undefined;
let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  (stopWrangler?.() ?? Promise.resolve()).then(
    () => process.exit(0),
    () => process.exit(1),
  );
};
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
/** Stops wrangler (bounded) and ends the whole group, this process included. */
const endAll = (why: string) => {
  console.error(`worker-dev: ${why}; ending the worker and all it started`);
  stopping = true;
  const grace = new Promise((resolve) => setTimeout(resolve, END_GRACE_MS));
  void Promise.race([stopWrangler?.().catch(() => {}), grace]).finally(killGroup);
};
watchSupervisor(() => endAll("its supervisor is gone"));
// From the start: the Worker answers before wrangler has started its last workerd. Both ways
// of running wrangler reload a changed Worker on a new workerd: the programmatic one bundles
// with esbuild's watch whatever `dev.watch` says, so a save in worker/ or common/ (a git pull)
// looked like a dead workerd, the worker was killed and restarted, and five saves in a minute
// stopped the whole stack.
watchDescendants(
  "workerd",
  (gone) => {
    if (!stopping) endAll(`workerd ${gone.join(", ")} exited`);
  },
  { replaceable: true },
);
stopWrangler = await startWrangler();
// A workerd lost before the watch above saw it: the Worker stops answering.
watchAnswers(`http://${values.ip}:${values.port}/healthz`, () => {
  if (!stopping) endAll("the Worker stopped answering");
});
