/**
 * A pids cgroup per sandbox, where this machine lets the host make one: the process limit that
 * holds whatever user the sandbox runs as. (This machine's cgroup v1 `pids` hierarchy has no
 * `pids.max`; there the per-replica user and RLIMIT_NPROC are the limit.)
 */
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, rmdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";

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
export function pidsCgroupRoot(): string | undefined {
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

/** Group removals still waiting for the group to empty (see `settle`). */
const removals = new Set<Promise<void>>();

/**
 * A pids cgroup of its own for the process about to start (`max` processes), for it to join
 * before it execs the rest — so nothing the sandbox forks escapes it — and removed after.
 */
export function pidsGroup(
  root: string | undefined,
  max: number,
): { path?: string; cleanup(): void } {
  const none = { cleanup: () => {} };
  if (!root) return none;
  const group = join(root, `runlet-${randomBytes(6).toString("hex")}`);
  try {
    mkdirSync(group);
    writeFileSync(join(group, "pids.max"), String(max));
  } catch {
    return none; // not allowed after all: RLIMIT_NPROC still holds
  }
  return {
    path: group,
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

/** Waits (up to 2 s) for the groups of replicas that have exited to be removed. */
export async function settleGroups(): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<void>((r) => {
    timer = setTimeout(r, 2_000);
  });
  await Promise.race([Promise.all(removals), limit]);
  clearTimeout(timer);
}
