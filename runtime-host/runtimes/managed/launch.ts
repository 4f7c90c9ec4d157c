/** How a managed replica's process is started: plain `node shim.mjs` for now (no sandbox yet). */
import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { WorkloadSpec } from "../../pool/workload.ts";

export const SHIM_PATH = fileURLToPath(new URL("./shim.mjs", import.meta.url));

const FALLBACK_PATH = "/usr/local/bin:/usr/bin:/bin";

/** Starts the process of one replica; a sandboxing launcher will wrap the same command. */
export type Launcher = (spec: WorkloadSpec) => ChildProcess;

/**
 * The child's whole environment. Never the host's own: it holds the internal token.
 */
export function managedEnv(spec: WorkloadSpec): NodeJS.ProcessEnv {
  return {
    ...spec.env,
    PATH: process.env.PATH || FALLBACK_PATH,
    HOME: spec.dir,
    NODE_ENV: "production",
    RUNLET_PROJECT: spec.project,
    RUNLET_APP: spec.app,
  };
}

export const launchManaged: Launcher = (spec) =>
  spawn(
    process.execPath,
    // An app's `main.js` without "type" in its package.json is detected as ESM or CommonJS; the
    // warning Node prints about that says nothing the app's author can act on.
    ["--disable-warning=MODULE_TYPELESS_PACKAGE_JSON", SHIM_PATH],
    {
      cwd: spec.dir,
      env: managedEnv(spec),
      stdio: ["ignore", "pipe", "pipe", "ipc"],
      serialization: "json",
      // Its own process group: stopping the replica also stops whatever it spawned.
      detached: true,
    },
  );
