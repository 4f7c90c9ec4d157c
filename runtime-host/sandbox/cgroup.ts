/**
 * Cgroups per sandbox, where this machine lets the host make them: a pids group (the process
 * limit that holds whatever user the sandbox runs as) and a memory group (the bound on all the
 * memory of the sandbox's processes: RLIMIT_DATA counts only each process's private memory, so
 * shared mappings, memfd, SysV shm and tmpfs files escaped it). cgroup v1 has one hierarchy per
 * controller (`pids`, `memory`), v2 one for both.
 */
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, rmdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** What a sandbox's groups bound. */
export interface GroupLimits {
  processes: number;
  memoryBytes: number;
}

/** A writable hierarchy and the limit files its groups have (of those Runlet sets). */
export interface GroupRoot {
  root: string;
  files: string[];
}

const LIMIT_FILES: Record<string, (limits: GroupLimits) => number> = {
  "pids.max": (l) => l.processes,
  "memory.limit_in_bytes": (l) => l.memoryBytes, // v1
  "memory.max": (l) => l.memoryBytes, // v2
};

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

/** The limit files a group made under `root` has, if the host may make one there. */
function probe(root: string): string[] {
  const dir = join(root, `runlet-probe-${process.pid}`);
  try {
    mkdirSync(dir);
  } catch {
    return [];
  }
  const files = Object.keys(LIMIT_FILES).filter((file) => existsSync(join(dir, file)));
  rmdirSync(dir);
  if (files.length > 0) sweep(root);
  return files;
}

/** The writable hierarchies with pids or memory limits: v1's own, else v2's. */
export function cgroupRoots(): GroupRoot[] {
  const v1 = ["/sys/fs/cgroup/pids", "/sys/fs/cgroup/memory"]
    .map((root) => ({ root, files: probe(root) }))
    .filter((r) => r.files.length > 0);
  if (v1.length > 0) return v1;
  const files = probe("/sys/fs/cgroup");
  return files.length > 0 ? [{ root: "/sys/fs/cgroup", files }] : [];
}

/** Group removals still waiting for the group to empty (see `settle`). */
const removals = new Set<Promise<void>>();

/** Removes `group` once its last processes are reaped (rmdir fails until then). */
function removeLater(group: string): void {
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
}

/**
 * Groups of their own, one per hierarchy, for the process about to start, for it to join
 * before it execs the rest — so nothing the sandbox forks escapes them — and removed after.
 */
export function sandboxGroups(
  roots: readonly GroupRoot[],
  limits: GroupLimits,
): { paths: string[]; cleanup(): void } {
  const paths: string[] = [];
  const id = `runlet-${randomBytes(6).toString("hex")}`;
  for (const { root, files } of roots) {
    const group = join(root, id);
    try {
      mkdirSync(group);
    } catch {
      continue; // not allowed after all: the rlimits still hold
    }
    try {
      for (const file of files)
        writeFileSync(join(group, file), String(LIMIT_FILES[file]?.(limits)));
      paths.push(group);
    } catch {
      rmdirSync(group);
    }
  }
  return { paths, cleanup: () => paths.forEach(removeLater) };
}

/** The command prefix that joins `paths`, then runs the rest (empty without groups). */
export function joinGroups(paths: readonly string[]): string[] {
  if (paths.length === 0) return [];
  const script = 'for g in $0; do echo $$ > "$g/cgroup.procs" || exit 125; done; exec "$@"';
  // Group paths are made by the host (no spaces): one word for the loop.
  return ["/bin/sh", "-c", script, paths.join(" ")];
}

/** Waits (up to 2 s) for the groups of replicas that have exited to be removed. */
export async function settleGroups(): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<void>((r) => {
    timer = setTimeout(r, 2_000);
  });
  await Promise.race([Promise.all(removals), limit]);
  clearTimeout(timer);
}
