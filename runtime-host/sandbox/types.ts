/** What the sandbox gives the replicas that use it: its limits, places and interface. */

/** Per-replica limits: RLIMIT_* and the sizes of its writable tmpfs folders. */
export const SANDBOX_LIMITS = {
  /** RLIMIT_DATA: heap and other private memory; past it allocations fail (node: a clean OOM). */
  dataBytes: 1024 * 1024 * 1024,
  openFiles: 1024,
  /**
   * RLIMIT_NPROC: the processes (and threads) of the replica's own host user. The kernel does
   * not apply it to root, so where replicas cannot have users of their own only a pids cgroup
   * (where the host may make one) bounds them.
   */
  processes: 256,
  /**
   * All the memory of the sandbox's processes together, shared mappings and its tmpfs files
   * included, where the host may make a memory cgroup: room for a full heap, /tmp and folder.
   */
  memoryBytes: 2 * 1024 * 1024 * 1024,
  /** The private /tmp (a tmpfs: it counts as memory while used). */
  tmpBytes: 256 * 1024 * 1024,
  /** The app's folder, its deployed files included (a tmpfs where the host may mount one). */
  folderBytes: 512 * 1024 * 1024,
} as const;

/** Where the app's folder is inside the sandbox. */
export const SANDBOX_APP_DIR = "/app";
/** Where a folder the host shares with the sandbox (WrapOptions.runDir) is inside it. */
export const SANDBOX_RUN_DIR = "/run/runlet";

/** A child's fds from 0 on, as spawn's `stdio` takes them (a number: a descriptor of the host's). */
export type Stdio = Array<"ignore" | "pipe" | "ipc" | number>;
/** spawn's own default. */
export const DEFAULT_STDIO: Stdio = ["pipe", "pipe", "pipe"];

export interface WrapOptions {
  /** Host paths the app may read, at the same path. */
  readOnly?: readonly string[];
  /** A folder made for this replica, writable by it, at SANDBOX_RUN_DIR; removed after. */
  runDir?: string;
  /** How the caller spawns the command (default: DEFAULT_STDIO); see Wrapped.stdio. */
  stdio?: Stdio;
}

export interface Sandbox {
  readonly kind: "bubblewrap" | "none";
  /** Whether replicas have a network of their own (else they share the host's loopback). */
  readonly isolatesNetwork: boolean;
  /**
   * The command that runs `command args` for an app whose folder is `dir`. An empty `dir` (a
   * spare's slot) may become a bounded tmpfs of the replica's own for as long as it runs.
   */
  wrap(
    command: string,
    args: readonly string[],
    dir: string,
    options?: WrapOptions,
  ): Promise<Wrapped>;
  /**
   * Waits (up to 2 s) until what was made for replicas that have exited is gone: their last
   * processes can take a moment to be reaped after the replica's own exit. For host shutdown.
   */
  settle(): Promise<void>;
  /** Undoes what sandboxes of a host that crashed left under `root`, so that it can be emptied. */
  reclaim(root: string): void;
}

export interface Wrapped {
  command: string;
  args: string[];
  /**
   * The `stdio` to spawn it with: the caller's, then the descriptors the sandbox passes on to
   * its own programs (bwrap's seccomp filter).
   */
  stdio: Stdio;
  /** The app folder's path as the app sees it (its cwd and HOME). */
  appDir: string;
  /** To call once the app's files are copied into its folder: gives them to the replica. */
  adopt(): Promise<void>;
  /** To call once the process has exited: removes what the sandbox made for it. */
  cleanup(): void;
  /**
   * The names of the sandbox's own processes in the replica's process group (bwrap's), which a
   * graceful stop leaves alone: a SIGTERM to them ends the whole sandbox at once, so the app
   * had no grace at all (see pool/process-group.ts). Empty where the sandbox has none.
   */
  ownProcesses: readonly string[];
}
