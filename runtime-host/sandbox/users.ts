/**
 * Each replica runs as a host user of its own, from a range reserved for Runlet (never root,
 * never the host's user): the kernel then applies RLIMIT_NPROC to its processes, no replica can
 * signal or read another's, and what it writes is its own. Its folder is a tmpfs of bounded
 * size, mounted by the host and owned by that user, so filling it fails the app, not the disk.
 */
import { execFile, spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { lchown, readdir } from "node:fs/promises";
import { join, resolve } from "node:path";

/** The first uid (and gid) of the range, and how many replicas the range serves at once. */
export const DEFAULT_UID_BASE = 1_900_000_000;
export const UID_COUNT = 65_536;

/** Where hosts claim their ranges, machine-wide (a tmpfs: a reboot frees every claim). */
const CLAIMS = "/run/runlet/uid-ranges";
/** How many ranges from the configured base a host tries. */
const MAX_RANGES = 64;

export class ReplicaUsers {
  static readonly #ranges = new Map<number, ReplicaUsers>();
  readonly #free: number[] = [];
  #next = 0;

  private constructor(readonly base: number) {}

  /**
   * The users of a range from `base` that no other live host on this machine holds: one pool
   * per process, however many sandboxes use it. Two hosts (two Runlets, or `runlet host` beside
   * `runlet start`) handed out the same uids, so their replicas shared a process limit.
   */
  static from(base: number): ReplicaUsers {
    const users = ReplicaUsers.#ranges.get(base) ?? new ReplicaUsers(claimRange(base));
    ReplicaUsers.#ranges.set(base, users);
    return users;
  }

  take(): number {
    const uid = this.#free.pop() ?? this.base + this.#next++;
    if (uid >= this.base + UID_COUNT) throw new Error(`all ${UID_COUNT} replica users are taken`);
    return uid;
  }

  give(uid: number): void {
    this.#free.push(uid);
  }
}

/**
 * Claims the first range from `base` that no live process holds: a file per range names its
 * holder by pid and start time (a pid is reused, the pair is not), removed as the process exits
 * or taken over once its holder is gone. Where claims cannot be written, `base` as it is.
 */
export function claimRange(base: number, claims = CLAIMS): number {
  try {
    mkdirSync(claims, { recursive: true, mode: 0o700 });
  } catch {
    return base;
  }
  const holder = `${process.pid} ${startTime(process.pid)}`;
  for (let i = 0; i < MAX_RANGES; i++) {
    const start = base + i * UID_COUNT;
    const path = join(claims, String(start));
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        writeFileSync(path, holder, { flag: "wx" });
        process.once("exit", () => rmSync(path, { force: true }));
        return start;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "EEXIST") return base;
      }
      const held = readFileSync(path, "utf8");
      const [pid, started] = held.split(" ");
      if (started && startTime(Number(pid)) === started) break; // a live host's: the next range
      if (readFileSync(path, "utf8") === held) rmSync(path, { force: true });
    }
  }
  throw new Error(`no free range of replica users from ${base}: ${MAX_RANGES} hosts hold them`);
}

/** When process `pid` started (field 22 of /proc/{pid}/stat); undefined if there is none. */
function startTime(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ")[19];
  } catch {
    return undefined;
  }
}

/** Mounts a tmpfs of `bytes` at `dir`, owned by `uid`; false where the host may not mount. */
export function mountFolder(dir: string, uid: number, bytes: number): Promise<boolean> {
  const options = `size=${bytes},mode=0700,uid=${uid},gid=${uid},nosuid,nodev`;
  return new Promise((resolve) =>
    execFile("mount", ["-t", "tmpfs", "-o", options, "runlet-app", dir], (err) => resolve(!err)),
  );
}

/** Detaches the tmpfs at `dir` (lazily: the replica's last processes may still hold it). */
export function unmountFolder(dir: string): void {
  spawnSync("umount", ["-l", dir]);
}

/** Unmounts what a crashed host left mounted under `root`, so that it can be emptied. */
export function unmountUnder(root: string): void {
  const under = `${resolve(root)}/`;
  let table = "";
  try {
    table = readFileSync("/proc/self/mountinfo", "utf8");
  } catch {
    return;
  }
  for (const line of table.split("\n")) {
    // Field 5 is the mount point, with spaces and the like escaped as octal.
    const point = line
      .split(" ")[4]
      ?.replace(/\\(\d{3})/g, (_, o) => String.fromCharCode(parseInt(o, 8)));
    if (point?.startsWith(under)) unmountFolder(point);
  }
}

/** Gives everything under `dir` (copied there by the host) to `uid`. */
export async function adopt(dir: string, uid: number): Promise<void> {
  await lchown(dir, uid, uid);
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    await lchown(join(entry.parentPath, entry.name), uid, uid);
  }
}
