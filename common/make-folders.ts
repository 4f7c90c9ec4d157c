/**
 * `mkdir -p`, one level at a time. Node's own recursive mkdir never returns for a path under a
 * file system that refuses new folders with ENOENT (procfs: `RUNLET_HOME=/proc/x runlet start`
 * hung with no word, round 13); here that level's mkdir error is thrown, naming the folder.
 */
import { mkdirSync, statSync } from "node:fs";
import { dirname } from "node:path";

export function makeFolders(dir: string, mode = 0o700): void {
  const missing: string[] = [];
  for (let at = dir; ; at = dirname(at)) {
    try {
      statSync(at);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
      missing.unshift(at);
      if (dirname(at) === at) break;
    }
  }
  for (const at of missing) {
    try {
      mkdirSync(at, { mode });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
  }
}
