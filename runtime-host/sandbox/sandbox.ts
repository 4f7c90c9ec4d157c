/**
 * Where replicas run: inside bubblewrap when this machine has it — their own pid, ipc, uts and
 * user namespaces, the system read-only, their app folder (at /app) and a private /tmp the only
 * writable places, nothing else of RUNLET_HOME in view — and always under resource limits.
 * Without bubblewrap (or with RUNLET_SANDBOX=off) replicas run as plain processes, with one loud
 * warning when the host starts.
 */
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import {
  accessSync,
  constants,
  existsSync,
  mkdirSync,
  readdirSync,
  rmdirSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { delimiter, dirname, join } from "node:path";

/** Per-replica limits (RLIMIT_*): memory the process may allocate, open files, processes. */
export const SANDBOX_LIMITS = {
  /** RLIMIT_DATA: heap and other private memory; past it allocations fail (node: a clean OOM). */
  dataBytes: 1024 * 1024 * 1024,
  openFiles: 1024,
  /**
   * RLIMIT_NPROC counts the processes (and threads) of the user, set inside each sandbox so each
   * counts its own; the kernel does not apply it when the host runs as root, so where the host
   * may make cgroups each sandbox also gets a pids cgroup with this maximum.
   */
  processes: 256,
} as const;

/** Where the app's folder is inside the sandbox. */
export const SANDBOX_APP_DIR = "/app";

export interface Sandbox {
  readonly kind: "bubblewrap" | "none";
  /**
   * The command that runs `command args` for an app whose folder is `dir`, and the app folder's
   * path as the app sees it (its cwd and HOME).
   */
  wrap(
    command: string,
    args: readonly string[],
    dir: string,
    readOnly?: readonly string[],
  ): Wrapped;
  /**
   * Waits (up to 2 s) until what was made for replicas that have exited is gone: their last
   * processes can take a moment to be reaped after the replica's own exit. For host shutdown.
   */
  settle(): Promise<void>;
}

export interface Wrapped {
  command: string;
  args: string[];
  /** The app folder's path as the app sees it (its cwd and HOME). */
  appDir: string;
  /** To call once the process has exited: removes what the sandbox made for it. */
  cleanup(): void;
}

function onPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    const path = join(dir, name);
    try {
      accessSync(path, constants.X_OK);
      return path;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** prlimit's flags for SANDBOX_LIMITS, when the machine has prlimit. */
function limitsPrefix(prlimit: string | undefined): string[] {
  if (!prlimit) return [];
  return [
    prlimit,
    `--data=${SANDBOX_LIMITS.dataBytes}`,
    `--nofile=${SANDBOX_LIMITS.openFiles}`,
    `--nproc=${SANDBOX_LIMITS.processes}`,
    "--",
  ];
}

/** The system directories a program needs, read-only; those missing here are skipped. */
const SYSTEM_DIRS = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc/alternatives"];
const SYSTEM_FILES = [
  // Without it the dynamic linker searches every library directory at each start.
  "/etc/ld.so.cache",
  "/etc/ssl",
  "/etc/ca-certificates",
  "/etc/resolv.conf",
  "/etc/hosts",
  "/etc/nsswitch.conf",
  "/etc/localtime",
];

/**
 * Removes groups of replicas gone for a minute or more (a host that stopped before it could
 * remove them); rmdir removes only empty groups, and young ones may be about to be joined.
 */
function sweep(root: string): void {
  for (const name of readdirSync(root)) {
    if (!name.startsWith("runlet-")) continue;
    try {
      if (Date.now() - statSync(join(root, name)).mtimeMs > 60_000) rmdirSync(join(root, name));
    } catch {
      // still in use, or gone already
    }
  }
}

/** A writable pids cgroup hierarchy (v1 `pids`, or v2 with the pids controller), if any. */
function pidsCgroupRoot(): string | undefined {
  for (const root of ["/sys/fs/cgroup/pids", "/sys/fs/cgroup"]) {
    const probe = join(root, `runlet-probe-${process.pid}`);
    try {
      mkdirSync(probe);
    } catch {
      continue;
    }
    const usable = existsSync(join(probe, "pids.max"));
    rmdirSync(probe);
    if (usable) {
      sweep(root);
      return root;
    }
  }
  return undefined;
}

/**
 * A pids cgroup of its own for the process about to start (SANDBOX_LIMITS.processes), joined
 * by a tiny shell before it execs the sandbox — so nothing the sandbox forks escapes it — and
 * removed after. The process limit that holds even when the host runs as root.
 */
function pidsGroup(root: string | undefined): { prefix: string[]; cleanup(): void } {
  const none = { prefix: [], cleanup: () => {} };
  if (!root) return none;
  const group = join(root, `runlet-${randomBytes(6).toString("hex")}`);
  try {
    mkdirSync(group);
    writeFileSync(join(group, "pids.max"), String(SANDBOX_LIMITS.processes));
  } catch {
    return none; // not allowed after all: prlimit's limit still holds on non-root hosts
  }
  return {
    prefix: ["/bin/sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', group],
    cleanup() {
      // The sandbox's last processes may need a moment to be reaped.
      const removal = (async () => {
        for (let attempt = 0; attempt < 50; attempt++) {
          try {
            rmdirSync(group);
            return;
          } catch {
            await new Promise((r) => setTimeout(r, 100).unref());
          }
        }
      })();
      removals.add(removal);
      void removal.then(() => removals.delete(removal));
    },
  };
}

/** Group removals still waiting for the group to empty (see `Sandbox.settle`). */
const removals = new Set<Promise<void>>();

async function settle(): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<void>((r) => {
    timer = setTimeout(r, 2_000);
  });
  await Promise.race([Promise.all(removals), limit]);
  clearTimeout(timer);
}

function bubblewrap(bwrap: string, prlimit: string | undefined): Sandbox {
  const prefix = limitsPrefix(prlimit);
  const cgroupRoot = pidsCgroupRoot();
  // Node itself, wherever it is installed (usually under /usr, already bound).
  const nodePrefix = dirname(dirname(process.execPath));
  const nodeDir = SYSTEM_DIRS.some((d) => nodePrefix === d || nodePrefix.startsWith(`${d}/`))
    ? []
    : [nodePrefix];
  return {
    kind: "bubblewrap",
    settle,
    wrap(command, args, dir, readOnly = []) {
      const binds: string[] = [];
      for (const path of [...SYSTEM_DIRS, ...SYSTEM_FILES, ...nodeDir, ...readOnly]) {
        if (existsSync(path)) binds.push("--ro-bind", path, path);
      }
      const argv = [
        "--unshare-user",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--hostname",
        "runlet",
        "--die-with-parent",
        // Root inside its user namespace, but without any capability there.
        "--cap-drop",
        "ALL",
        // The private /tmp first: binds below may live under the host's /tmp (a checkout there).
        "--tmpfs",
        "/tmp",
        ...binds,
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--bind",
        dir,
        SANDBOX_APP_DIR,
        // Last: the sandbox's own root (where bwrap made the mount points) read-only too.
        "--remount-ro",
        "/",
        "--chdir",
        SANDBOX_APP_DIR,
        "--",
        // The limits inside: each sandbox counts its own processes, not all of the host user's.
        ...prefix,
        command,
        ...args,
      ];
      const group = pidsGroup(cgroupRoot);
      const [first, ...rest] = [...group.prefix, bwrap, ...argv] as [string, ...string[]];
      return { command: first, args: rest, appDir: SANDBOX_APP_DIR, cleanup: group.cleanup };
    },
  };
}

function unsandboxed(prlimit: string | undefined): Sandbox {
  const prefix = limitsPrefix(prlimit);
  return {
    kind: "none",
    settle: async () => {},
    wrap(command, args, dir) {
      const [first, ...rest] = [...prefix, command, ...args] as [string, ...string[]];
      return { command: first, args: rest, appDir: dir, cleanup: () => {} };
    },
  };
}

/** No sandbox and no limits: for tests of other parts. */
export const NO_SANDBOX: Sandbox = unsandboxed(undefined);

/**
 * Picks the sandbox once at host start: bubblewrap if it is installed and works here (it needs
 * user namespaces), else plain processes with a warning saying what is missing.
 */
export function detectSandbox(env: NodeJS.ProcessEnv = process.env): Sandbox {
  const prlimit = onPath("prlimit");
  if (env.RUNLET_SANDBOX === "off") {
    console.error(
      "runtime host: WARNING: RUNLET_SANDBOX=off — apps run as plain processes, NOT sandboxed",
    );
    return unsandboxed(prlimit);
  }
  const bwrap = onPath("bwrap");
  const why = !bwrap
    ? "bubblewrap (bwrap) is not installed: apt-get install bubblewrap"
    : spawnSync(bwrap, ["--unshare-user", "--unshare-pid", "--ro-bind", "/", "/", "true"], {
          timeout: 5_000,
        }).status !== 0
      ? "bubblewrap cannot create namespaces on this machine (user namespaces disabled?)"
      : undefined;
  if (bwrap && !why) return bubblewrap(bwrap, prlimit);
  console.error(
    `runtime host: WARNING: apps run as plain processes, NOT sandboxed: ${why}. Every app can read what the host's user can.`,
  );
  return unsandboxed(prlimit);
}
