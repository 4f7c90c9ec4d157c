/**
 * Replicas inside bubblewrap: their own pid, ipc, uts, mount and network namespaces, the system
 * read-only, their folder (at /app) and a private /tmp (a bounded tmpfs) the only writable
 * places, nothing else of RUNLET_HOME in view. Where the host runs as root each replica is a
 * host user of its own (users.ts), its folder a bounded tmpfs too, and its network one the host
 * made, with outbound access only (network.ts). Elsewhere a replica is root of a user namespace
 * of its own, without capabilities, and has no network at all. Either way it cannot make a user
 * namespace of its own (seccomp.ts).
 */
import {
  chownSync,
  closeSync,
  existsSync,
  mkdirSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { dirname } from "node:path";
import { cgroupRoots, joinGroups, sandboxGroups, settleGroups } from "./cgroup.ts";
import { type ReplicaNetworks, SLIRP } from "./network.ts";
import { openProgram } from "./seccomp.ts";
import {
  DEFAULT_STDIO,
  SANDBOX_APP_DIR,
  SANDBOX_LIMITS,
  SANDBOX_RUN_DIR,
  type Sandbox,
  type Stdio,
  type Wrapped,
} from "./types.ts";
import { adopt, mountFolder, type ReplicaUsers, unmountFolder, unmountUnder } from "./users.ts";

/** The system directories a program needs, read-only; those missing here are skipped. */
const SYSTEM_DIRS = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc/alternatives"];
const SYSTEM_FILES = [
  // Without it the dynamic linker searches every library directory at each start.
  "/etc/ld.so.cache",
  "/etc/ssl",
  "/etc/ca-certificates",
  "/etc/hosts",
  "/etc/nsswitch.conf",
  "/etc/localtime",
];

export interface Isolation {
  bwrap: string;
  prlimit?: string;
  /** A host user per replica (root hosts with setpriv). */
  users?: { setpriv: string; pool: ReplicaUsers };
  /** A network per replica made by the host; without it replicas have no network. */
  networks?: ReplicaNetworks;
  /** The seccomp filter (seccomp.ts); none where it is not known for the machine. */
  seccomp?: Buffer;
}

/** prlimit's flags for SANDBOX_LIMITS, when the machine has prlimit. */
export function limitsPrefix(prlimit: string | undefined): string[] {
  if (!prlimit) return [];
  return [
    prlimit,
    `--data=${SANDBOX_LIMITS.dataBytes}`,
    `--nofile=${SANDBOX_LIMITS.openFiles}`,
    `--nproc=${SANDBOX_LIMITS.processes}`,
    "--",
  ];
}

/**
 * The resolv.conf of replicas with outbound access: slirp4netns's DNS forwarder. Under /run
 * (root's; such replicas exist only on root hosts), not /tmp, where another user could have put
 * a link for root to write through.
 */
function resolvConf(): string {
  const path = "/run/runlet-sandbox/resolv.conf";
  mkdirSync(dirname(path), { recursive: true, mode: 0o755 });
  writeFileSync(path, `nameserver ${SLIRP.dns}\n`, { mode: 0o644 });
  return path;
}

/** Becomes `uid`, with no capability and no way to gain one (setuid programs do not). */
function asUser(setpriv: string | undefined, uid: number | undefined): string[] {
  if (!setpriv || uid === undefined) return [];
  return [
    setpriv,
    `--reuid=${uid}`,
    `--regid=${uid}`,
    "--clear-groups",
    "--inh-caps=-all",
    "--bounding-set=-all",
    "--no-new-privs",
    "--",
  ];
}

/**
 * The folders above the places bound, made readable by all: bwrap makes them 0700, which a
 * replica that is not root of its own user namespace could not pass.
 */
function parentsOf(places: readonly string[]): string[] {
  const parents = new Set<string>();
  for (const place of places) {
    for (let dir = dirname(place); dir !== "/"; dir = dirname(dir)) parents.add(dir);
  }
  return [...parents].sort().flatMap((dir) => ["--perms", "0755", "--dir", dir]);
}

/**
 * The filter on the first descriptor after the caller's own, for bwrap to read (and close)
 * before it runs the command; the host's copy is closed when the sandbox is undone.
 */
function seccompFd(
  program: Buffer | undefined,
  stdio: Stdio,
  made: (step: () => void) => void,
): { stdio: Stdio; flags: string[] } {
  if (!program) return { stdio, flags: [] };
  const fd = openProgram(program);
  made(() => closeSync(fd));
  return { stdio: [...stdio, fd], flags: ["--seccomp", String(stdio.length)] };
}

export function bubblewrap(isolation: Isolation): Sandbox {
  const { bwrap, users, networks } = isolation;
  const prefix = limitsPrefix(isolation.prlimit);
  const groupRoots = cgroupRoots();
  const resolv = networks?.outbound ? resolvConf() : "/etc/resolv.conf";
  // Node itself, wherever it is installed (usually under /usr, already bound).
  const nodePrefix = dirname(dirname(process.execPath));
  const nodeDir = SYSTEM_DIRS.some((d) => nodePrefix === d || nodePrefix.startsWith(`${d}/`))
    ? []
    : [nodePrefix];
  /** The cleanups of sandboxes made (or being made) and not yet undone. */
  const live = new Set<() => void>();
  return {
    kind: "bubblewrap",
    isolatesNetwork: true,
    async settle() {
      // Sandboxes still being made or not yet cleaned up once the host has stopped its
      // replicas: given a moment, then undone (a mount or a namespace must not outlive the host).
      const deadline = Date.now() + 2_000;
      while (live.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      for (const cleanup of [...live]) cleanup();
      await settleGroups();
    },
    reclaim: unmountUnder,
    async wrap(command, args, dir, options = {}): Promise<Wrapped> {
      const undo: Array<() => void> = [];
      let ended = false;
      const cleanup = () => {
        ended = true;
        live.delete(cleanup);
        for (const step of undo.splice(0).reverse()) step();
      };
      live.add(cleanup);
      // What is made after the sandbox was undone (the host stopping meanwhile) is undone at once.
      const made = (step: () => void) => {
        if (ended) step();
        else undo.push(step);
      };
      try {
        const uid = users?.pool.take();
        if (uid !== undefined) made(() => users?.pool.give(uid));
        // A new, empty folder (a spare's slot) becomes a bounded one of the replica's own; a
        // folder with files in it is bound as it is.
        if (uid !== undefined && readdirSync(dir).length === 0) {
          if (await mountFolder(dir, uid, SANDBOX_LIMITS.folderBytes))
            made(() => unmountFolder(dir));
          else chownSync(dir, uid, uid); // unbounded, but the app's own
        }
        const readable = [
          ...SYSTEM_DIRS,
          ...SYSTEM_FILES,
          ...nodeDir,
          ...(options.readOnly ?? []),
        ].filter((path) => existsSync(path));
        const binds = parentsOf([...readable, SANDBOX_RUN_DIR]);
        for (const path of readable) binds.push("--ro-bind", path, path);
        if (existsSync(resolv)) binds.push("--ro-bind", resolv, "/etc/resolv.conf");
        if (options.runDir) {
          mkdirSync(options.runDir, { mode: 0o700 });
          made(() => rmSync(options.runDir as string, { recursive: true, force: true }));
          if (uid !== undefined) chownSync(options.runDir, uid, uid);
          binds.push("--bind", options.runDir, SANDBOX_RUN_DIR);
        }
        const network = await networks?.create();
        if (network) made(network.cleanup);
        if (ended) throw new Error("the host is stopping");
        const seccomp = seccompFd(isolation.seccomp, options.stdio ?? DEFAULT_STDIO, made);
        const argv = [
          // As a user of its own (bwrap runs as root, which may read RUNLET_HOME to bind the
          // replica's folder; setpriv then drops to the user, every capability with it), or
          // as root of a user namespace of its own, without any capability there.
          ...(uid === undefined ? ["--unshare-user", "--cap-drop", "ALL"] : []),
          "--unshare-pid",
          "--unshare-ipc",
          "--unshare-uts",
          // In the host's namespace made for it, or (without one) in a namespace of its own.
          ...(network ? [] : ["--unshare-net"]),
          "--hostname",
          "runlet",
          "--die-with-parent",
          // No new user namespace inside, in either mode (seccomp.ts).
          ...seccomp.flags,
          // The private /tmp first: binds below may live under the host's /tmp (a checkout there).
          "--size",
          String(SANDBOX_LIMITS.tmpBytes),
          "--perms",
          "1777",
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
          ...asUser(users?.setpriv, uid),
          // The limits inside: the sandbox's processes count, not all of the host user's.
          ...prefix,
          command,
          ...args,
        ];
        const groups = sandboxGroups(groupRoots, SANDBOX_LIMITS);
        made(groups.cleanup);
        const [first, ...rest] = [
          ...joinGroups(groups.paths),
          ...(network?.prefix ?? []),
          bwrap,
          ...argv,
        ] as [string, ...string[]];
        return {
          command: first,
          args: rest,
          stdio: seccomp.stdio,
          appDir: SANDBOX_APP_DIR,
          adopt: () => (uid === undefined ? Promise.resolve() : adopt(dir, uid)),
          cleanup,
          // Its monitor and the namespace's init; both end the sandbox when they die.
          ownProcesses: ["bwrap"],
        };
      } catch (err) {
        cleanup();
        throw err;
      }
    },
  };
}
