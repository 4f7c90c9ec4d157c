/**
 * How the host reaches a custom app's server, and the host's own name for a relay's Unix
 * socket. The relay makes `http.sock` in the folder the host shares with the sandbox, where
 * the app — the relay's user — may write too: it could put there a symlink to any socket of
 * the machine, which the host (root) would follow on connect and forward the app's callers to (found probing as a tenant on `runlet start`: a root-only
 * socket answered through the app's URL). So the host connects through a hard link of its own,
 * made outside the sandbox's reach: link(2) does not follow a symlink, and once the link is a
 * socket it is that socket's inode, whatever the shared folder holds later.
 */
import { linkSync, lstatSync, rmSync } from "node:fs";
import { get } from "node:http";
import { connect } from "node:net";
import { LOOPBACK } from "../../../common/consts.ts";

/**
 * Links `shared` at `pinned` if it is a socket (not a symlink, nor anything else) and says
 * whether it did; false too while `shared` does not exist yet.
 */
export function pinSocket(shared: string, pinned: string): boolean {
  rmSync(pinned, { force: true });
  try {
    linkSync(shared, pinned);
  } catch {
    return false;
  }
  if (lstatSync(pinned).isSocket()) return true;
  rmSync(pinned, { force: true });
  return false;
}

/** Removes the host's link (the replica has ended). */
export function unpinSocket(pinned: string): void {
  rmSync(pinned, { force: true });
}

/** Where the host reaches the app's server: a loopback port, or the sandbox relay's socket. */
export type Target = { port: number } | { socketPath: string };

/**
 * Whether `url` answers 2xx within a second: `true`, else what it did instead (for the start's
 * error).
 */
export function healthy(url: string, socketPath: string | undefined): Promise<true | string> {
  return new Promise((resolve) => {
    const probe = get(url, { timeout: 1_000, socketPath }, (res) => {
      res.resume();
      const status = res.statusCode ?? 0;
      res.once("end", () =>
        resolve(status >= 200 && status < 300 ? true : `it answered ${status}`),
      );
      res.once("error", () => resolve("its answer broke off"));
    });
    probe.once("timeout", () => probe.destroy());
    probe.once("error", () => resolve("no answer"));
  });
}

/** Whether something accepts a connection at `target` now. */
export function accepts(target: Target): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = "port" in target ? connect(target.port, LOOPBACK) : connect(target.socketPath);
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}
