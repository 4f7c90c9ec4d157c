/**
 * What `runlet start` writes to `RUNLET_HOME` before it starts anything: its folders, the pid
 * file, the internal token and the host token. A home it cannot write (a read-only mount, a full
 * disk, a folder of another user's) stops it here with one line saying so, not a stack trace
 * from the middle of a start, and nothing half-written left behind (docs/deploy.md, "Backing up
 * and moving a home").
 */
import { statfsSync } from "node:fs";
import { makeFolders } from "../common/make-folders.ts";
import {
  homePaths,
  loadOrCreateHostToken,
  loadOrCreateInternalToken,
} from "../control-plane/home.ts";
import { CliError } from "./command.ts";
import { claimHome } from "./home-lock.ts";

/** Below this much free space in the home's file system, `runlet start` does not begin. */
export const MIN_FREE_BYTES = 64 * 1024 * 1024;

const REASONS: Record<string, string> = {
  EROFS: "it is on a read-only file system",
  ENOSPC: "its disk is full",
  EDQUOT: "its disk quota is used up",
  EACCES: "permission denied",
  EPERM: "permission denied",
  ENOTDIR: "a part of its path is a file, not a folder",
  // A level whose parent exists, refused by its file system (procfs, sysfs).
  ENOENT: "its file system does not let a folder be made there",
};

export function unwritable(home: string, err: NodeJS.ErrnoException): CliError {
  const reason = REASONS[err.code ?? ""] ?? err.message;
  return new CliError(
    `cannot write to RUNLET_HOME ${home}: ${reason} (${err.code ?? "error"}). Give it a writable folder with room (RUNLET_HOME)`,
  );
}

/** Free bytes for this process in the file system holding `home` (which exists). */
export function freeBytes(home: string): number {
  const fs = statfsSync(home);
  return fs.bavail * fs.bsize;
}

/** Makes the home ready, claims it and gives back the internal token; CliError if it cannot. */
export async function prepareHome(home: string): Promise<string> {
  const paths = homePaths(home);
  try {
    makeFolders(paths.logs);
  } catch (err) {
    throw unwritable(home, err as NodeJS.ErrnoException);
  }
  const free = freeBytes(home);
  if (free < MIN_FREE_BYTES)
    throw new CliError(
      `RUNLET_HOME ${home} has ${Math.floor(free / 1024 / 1024)} MiB free; runlet start needs ${MIN_FREE_BYTES / 1024 / 1024} MiB (its database, the run store and logs grow): free some room, or give it a home on another disk (RUNLET_HOME)`,
    );
  try {
    claimHome(home); // one start per home
    const internalToken = await loadOrCreateInternalToken(home);
    // The host joins the control plane's registry with it (docs/hosts.md); the control plane
    // adopts it, or replaces a revoked one, at its start: a restarted host reads it again.
    await loadOrCreateHostToken(home);
    return internalToken;
  } catch (err) {
    if (err instanceof CliError || !(err as NodeJS.ErrnoException).code) throw err;
    throw unwritable(home, err as NodeJS.ErrnoException);
  }
}
