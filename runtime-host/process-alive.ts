/**
 * Whether process `pid` still runs: signal 0 checks without sending anything, and EPERM means
 * it runs under another user. Used to tell what a dead host left (its network namespaces, its
 * run reports) from what a live one on the same machine still holds.
 */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}
