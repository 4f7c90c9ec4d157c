/** How a managed replica's process is started: `node shim.mjs`, inside the host's sandbox. */

import { type ChildProcess, spawn } from "node:child_process";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { APP_ENV } from "../../../common/consts.ts";
import type { WorkloadSpec } from "../../pool/workload.ts";
import { NO_SANDBOX, SANDBOX_LIMITS, type Sandbox } from "../../sandbox/sandbox.ts";

export const SHIM_PATH = fileURLToPath(new URL("./shim.mjs", import.meta.url));

export const FALLBACK_PATH = "/usr/local/bin:/usr/bin:/bin";

/** V8's heap limit for a managed replica, MiB (half of SANDBOX_LIMITS.dataBytes). */
const MAX_HEAP_MIB = SANDBOX_LIMITS.dataBytes / 1024 / 1024 / 2;

/** A replica's process, and how its app's files become its own once copied into its folder. */
export interface Launched {
  child: ChildProcess;
  adopt(): Promise<void>;
  /** Its sandbox's own processes, which a graceful stop spares (`Wrapped.ownProcesses`). */
  ownProcesses?: readonly string[];
}

/** Starts the process of one replica (once its sandbox is made). */
export type Launcher = (spec: WorkloadSpec) => Promise<Launched>;

/**
 * The child's whole environment: the app's own (its project's secrets) and ours on top. Never
 * the host's environment: it holds the internal token.
 */
export function managedEnv(
  spec: WorkloadSpec,
  home: string = spec.dir,
  secrets: Record<string, string> = {},
): NodeJS.ProcessEnv {
  return {
    ...spec.env,
    ...withoutHostSet(secrets),
    PATH: process.env.PATH || FALLBACK_PATH,
    HOME: home,
    NODE_ENV: "production",
    [APP_ENV.project]: spec.project,
    [APP_ENV.app]: spec.app,
    [APP_ENV.version]: String(spec.version),
  };
}

/** Variables the host sets for every replica: a secret of the same name does not replace them. */
const HOST_SET = new Set(["PATH", "HOME", "PWD", "NODE_ENV"]);

const withoutHostSet = (secrets: Record<string, string>) =>
  Object.fromEntries(Object.entries(secrets).filter(([name]) => !HOST_SET.has(name)));

/**
 * What a spare is given when it loads an app, over the environment it started with: the app's
 * own and its project's secrets — but a secret never over a variable the host set (a custom
 * app's are kept the same way, by managedEnv) — and the app's names.
 */
export function loadEnv(
  spec: WorkloadSpec,
  secrets: Record<string, string>,
): Record<string, string> {
  return {
    ...spec.env,
    ...withoutHostSet(secrets),
    [APP_ENV.project]: spec.project,
    [APP_ENV.app]: spec.app,
    [APP_ENV.version]: String(spec.version),
  };
}

/** Starts replicas in `sandbox` (the shim's own folder is visible to them, read-only). */
export function managedLauncher(sandbox: Sandbox): Launcher {
  return async (spec) => {
    const { command, args, stdio, appDir, adopt, cleanup, ownProcesses } = await sandbox.wrap(
      process.execPath,
      // An app's `main.js` without "type" in its package.json is detected as ESM or CommonJS;
      // the warning Node prints about that says nothing the app's author can act on.
      [
        "--disable-warning=MODULE_TYPELESS_PACKAGE_JSON",
        // Below the sandbox's memory limit, so V8 collects garbage before allocations fail.
        `--max-old-space-size=${MAX_HEAP_MIB}`,
        SHIM_PATH,
      ],
      spec.dir,
      { readOnly: [dirname(SHIM_PATH)], stdio: ["ignore", "pipe", "pipe", "ipc"] },
    );
    const child = spawn(command, args, {
      cwd: spec.dir,
      // Node adds its IPC channel's variables; the sandbox passes the environment on as is.
      env: managedEnv(spec, appDir),
      stdio,
      serialization: "json",
      // Its own process group: stopping the replica also stops whatever it spawned.
      detached: true,
    });
    child.once("exit", cleanup);
    child.once("error", cleanup);
    return { child, adopt, ownProcesses };
  };
}

/** Plain processes, no limits: for tests of other parts. */
export const launchManaged: Launcher = managedLauncher(NO_SANDBOX);
