/**
 * For the CLI's tests against a real Node control plane: one started as a child process, and
 * the CLI run in this process with its output captured.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { vi } from "vitest";
import { ENV } from "../../common/consts.ts";
import { main } from "../main.ts";
import { ROOT } from "./start.ts";

export interface TestControlPlane {
  server: ChildProcess;
  baseUrl: string;
  /** Everything it printed so far. */
  output(): string;
}

/** A Node control plane with its home under `dir`, on a free port; up within 60 s or throws. */
export async function startControlPlane(
  dir: string,
  tokens: { internal: string; bootstrap: string },
): Promise<TestControlPlane> {
  // Compiled as `runlet start` runs it (bin/run-ts.mjs), not through tsx's loader: a second
  // or two of a busy machine's CPU fewer per start.
  const server = spawn(process.execPath, ["bin/run-ts.mjs", "control-plane/server.ts"], {
    cwd: ROOT,
    env: {
      ...process.env,
      [ENV.home]: join(dir, "control-plane"),
      [ENV.internalToken]: tokens.internal,
      [ENV.bootstrapToken]: tokens.bootstrap,
      [ENV.controlPort]: "0",
      [ENV.apiUrl]: "https://api.example.com",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  for (const stream of [server.stdout, server.stderr]) stream?.on("data", (d) => (output += d));
  const deadline = Date.now() + 60_000;
  for (;;) {
    const port = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(output)?.[1];
    if (port) return { server, baseUrl: `http://127.0.0.1:${port}`, output: () => output };
    if (server.exitCode !== null || Date.now() > deadline) {
      server.kill("SIGTERM");
      throw new Error(`the control plane did not start:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Runs the CLI in this process with `env` over the environment; what it printed, and its code. */
export async function runlet(args: string[], env: Record<string, string | undefined>) {
  const out = vi.spyOn(console, "log").mockImplementation(() => {});
  const err = vi.spyOn(console, "error").mockImplementation(() => {});
  const errWrite = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
  for (const [name, value] of Object.entries(env)) vi.stubEnv(name, value);
  try {
    const code = await main(args);
    const text = (spy: typeof out) => spy.mock.calls.map((c) => c.join(" ")).join("\n");
    // What went to stderr past console.error: the progress of `--all`, as it was written.
    const progress = errWrite.mock.calls.map((c) => String(c[0])).join("");
    return { code, stdout: text(out), stderr: text(err), progress };
  } finally {
    vi.unstubAllEnvs();
    out.mockRestore();
    err.mockRestore();
    errWrite.mockRestore();
  }
}

/** A control plane whose first user `runlet init` made, the CLI's credentials in `home`. */
export interface FirstUser {
  /** The folder holding the control plane's home and `home`. */
  dir: string;
  controlPlane: TestControlPlane;
  baseUrl: string;
  /** The first user's environment: RUNLET_HOME with the local.json `runlet init` wrote. */
  env: Record<string, string | undefined>;
  /** What `runlet init` printed. */
  init: { stdout: string; stderr: string };
  /** Stops the control plane and removes `dir`. */
  stop(): Promise<void>;
}

/** Starts a control plane under a new temporary folder and makes its first user ("Ada"). */
export async function withFirstUser(name: string, home: string): Promise<FirstUser> {
  const dir = await mkdtemp(join(tmpdir(), `runlet-${name}-`));
  const bootstrap = `bootstrap-token-for-the-${name}-test-0123456789`;
  const controlPlane = await startControlPlane(dir, {
    internal: `internal-token-for-the-${name}-test-0123456789`,
    bootstrap,
  });
  const { baseUrl } = controlPlane;
  const env = {
    [ENV.home]: join(dir, home),
    [ENV.token]: undefined,
    [ENV.project]: undefined,
    [ENV.baseUrl]: undefined,
    [ENV.apiUrl]: undefined,
  };
  const init = await runlet(["init", "--control-plane", baseUrl, "--name", "Ada"], {
    ...env,
    [ENV.bootstrapToken]: bootstrap,
  });
  if (init.code !== 0) throw new Error(`runlet init failed: ${init.stderr}`);
  return {
    dir,
    controlPlane,
    baseUrl,
    env,
    init: { stdout: init.stdout, stderr: init.stderr },
    stop: async () => {
      controlPlane.server.kill("SIGTERM");
      await rm(dir, { recursive: true, force: true });
    },
  };
}
