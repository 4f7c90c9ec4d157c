// runlet start's first writes to RUNLET_HOME: a home copied with its pid file, a full disk and a
// read-only mount each end with one clear line and nothing half-written (docs/deploy.md).
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runlet } from "./commands/test-support.ts";
import { prepareHome } from "./home-setup.ts";

const root = mkdtempSync(join(tmpdir(), "runlet-home-setup-"));
const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) c.kill();
  rmSync(root, { recursive: true, force: true });
});

/** A live process whose command line has `command`, as a running `runlet start`'s has `start`. */
function fakeStart(command = "start"): number {
  const child = spawn(process.execPath, ["-e", "setTimeout(() => {}, 60_000)", command], {
    stdio: "ignore",
  });
  children.push(child);
  return child.pid as number;
}

function canMount(): boolean {
  if (process.getuid?.() !== 0) return false;
  try {
    const probe = join(root, "probe");
    mkdirSync(probe);
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=64k", "tmpfs", probe], { stdio: "ignore" });
    execFileSync("umount", [probe], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

describe("prepareHome", () => {
  it("refuses a home a running start holds, and takes a copy of it that was made while it ran", async () => {
    const home = join(root, "running");
    mkdirSync(home);
    writeFileSync(join(home, "runlet.pid"), `${fakeStart()}\n${realpathSync(home)}\n`);
    await expect(prepareHome(home)).rejects.toThrow(/another runlet start \(pid \d+\) is using/);
    const copy = join(root, "restored");
    cpSync(home, copy, { recursive: true });
    const token = await prepareHome(copy);
    expect(token.length).toBeGreaterThanOrEqual(32);
    expect(existsSync(join(copy, "host-token"))).toBe(true);
  });

  it("refuses a home a running runlet host holds (it would clear that host's spares)", async () => {
    const home = join(root, "hosted");
    mkdirSync(home);
    writeFileSync(join(home, "runlet.pid"), `${fakeStart("host")}\n${realpathSync(home)}\n`);
    await expect(prepareHome(home)).rejects.toThrow(/another runlet host \(pid \d+\) is using/);
  });

  it("says the disk is full, and leaves no half-written token", async () => {
    const home = join(root, "full");
    mkdirSync(home);
    symlinkSync("/dev/full", join(home, "internal-token.tmp")); // every write to it: ENOSPC
    await expect(prepareHome(home)).rejects.toThrow(
      `cannot write to RUNLET_HOME ${home}: its disk is full (ENOSPC)`,
    );
    // runlet.pid goes as the start exits (home-lock.ts); no token, no temp file.
    expect(readdirSync(home).sort()).toEqual(["logs", "runlet.pid"]);
  });

  it.skipIf(!canMount())("says the home is on a read-only file system", async () => {
    const mnt = join(root, "ro");
    mkdirSync(mnt);
    execFileSync("mount", ["-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", mnt]);
    try {
      await expect(prepareHome(join(mnt, "home"))).rejects.toThrow(
        `cannot write to RUNLET_HOME ${join(mnt, "home")}: it is on a read-only file system (EROFS)`,
      );
    } finally {
      execFileSync("umount", [mnt]);
    }
  });

  // Round 13: Node's recursive mkdir never returned there, and runlet start hung with no word.
  it.skipIf(process.platform !== "linux")("says a home under /proc cannot be made", async () => {
    await expect(prepareHome("/proc/runlet-home")).rejects.toThrow(
      "cannot write to RUNLET_HOME /proc/runlet-home: its file system does not let a folder be made there (ENOENT)",
    );
  });
});

describe("runlet start on a home a running start holds", () => {
  it("says that start holds it, not that its ports are taken (npm start run twice)", async () => {
    const home = join(root, "twice");
    mkdirSync(home);
    const first = fakeStart();
    writeFileSync(join(home, "runlet.pid"), `${first}\n${realpathSync(home)}\n`);
    // The first start's control plane holds the port the second would take.
    const held = createServer();
    await new Promise<void>((listening) => held.listen(0, "127.0.0.1", listening));
    const { port } = held.address() as { port: number };
    try {
      const second = await runlet(["start"], {
        RUNLET_HOME: home,
        RUNLET_CONTROL_PORT: String(port),
      });
      expect(second.code).toBe(1);
      // It said "port … is already in use: … set RUNLET_CONTROL_PORT to a free port", and one
      // set so was then refused as this.
      expect(second.stderr).toContain(`another runlet start (pid ${first}) is using ${home}`);
      expect(second.stderr).not.toContain("already in use");
    } finally {
      held.close();
    }
  });
});
