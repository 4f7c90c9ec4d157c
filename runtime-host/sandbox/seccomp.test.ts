// The seccomp filter: its program run here as the kernel would, then for real in replicas of
// both sandbox modes (a host user of its own, where the host is root; root of bwrap's user
// namespace elsewhere), managed and custom: no new user namespace, everything else as before.
import { execFileSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunningHost } from "../server.ts";
import {
  configOf,
  hostClient,
  newHome,
  removeHome,
  startTestHost,
  TOKEN,
} from "../test-support.ts";
import { bubblewrap } from "./bubblewrap.ts";
import { detectSandbox, type Sandbox } from "./sandbox.ts";
import { seccompProgram } from "./seccomp.ts";

const ALLOW = 0x7fff_0000;
const EPERM = 0x0005_0000 | 1;
const ENOSYS = 0x0005_0000 | 38;
const CLONE_NEWUSER = 0x1000_0000n;
const SIGCHLD = 17n;
const X64 = 0xc000_003e;
const AARCH64 = 0xc000_00b7;
const I386 = 0x4000_0003;

/** The action `program` returns for one call, run as the kernel runs classic BPF. */
function verdict(program: Buffer, arch: number, nr: number, arg0 = 0n): number {
  const data = Buffer.alloc(64); // struct seccomp_data
  data.writeInt32LE(nr, 0);
  data.writeUInt32LE(arch, 4);
  data.writeBigUInt64LE(arg0, 16);
  let a = 0;
  for (let pc = 0; pc * 8 < program.length; pc++) {
    const [code, jt, jf, k] = [
      program.readUInt16LE(pc * 8),
      program.readUInt8(pc * 8 + 2),
      program.readUInt8(pc * 8 + 3),
      program.readUInt32LE(pc * 8 + 4),
    ];
    if (code === 0x20) a = data.readUInt32LE(k);
    else if (code === 0x15) pc += a === k ? jt : jf;
    else if (code === 0x35) pc += a >= k ? jt : jf;
    else if (code === 0x45) pc += (a & k) !== 0 ? jt : jf;
    else if (code === 0x06) return k;
    else throw new Error(`opcode ${code} at ${pc}`);
  }
  throw new Error("the program ends without returning");
}

describe("the seccomp program", () => {
  const x64 = seccompProgram("x64") as Buffer;
  const arm64 = seccompProgram("arm64") as Buffer;

  it("refuses a new user namespace through unshare and clone, on x86_64 and arm64", () => {
    for (const [program, arch, unshare, clone] of [
      [x64, X64, 272, 56],
      [arm64, AARCH64, 97, 220],
    ] as const) {
      expect(verdict(program, arch, unshare, CLONE_NEWUSER)).toBe(EPERM);
      expect(verdict(program, arch, unshare, CLONE_NEWUSER | 0x2_0000n)).toBe(EPERM);
      expect(verdict(program, arch, clone, CLONE_NEWUSER | SIGCHLD)).toBe(EPERM);
      // Other namespaces and plain forks pass (the kernel then decides, as without a filter).
      expect(verdict(program, arch, unshare, 0x2_0000n)).toBe(ALLOW);
      expect(verdict(program, arch, clone, 0x0120_0000n | SIGCHLD)).toBe(ALLOW);
      // The flag's bit in the high half of the u64 is not CLONE_NEWUSER.
      expect(verdict(program, arch, unshare, CLONE_NEWUSER << 32n)).toBe(ALLOW);
      expect(verdict(program, arch, 435)).toBe(ENOSYS); // clone3
    }
  });

  it("allows every other call of the host's own ABI", () => {
    for (const nr of [0, 1, 39, 57, 59, 61, 231, 334]) expect(verdict(x64, X64, nr)).toBe(ALLOW);
    for (const nr of [63, 64, 93, 172, 221, 260]) expect(verdict(arm64, AARCH64, nr)).toBe(ALLOW);
  });

  it("answers ENOSYS to every call of another ABI: i386, x32, the other machine's", () => {
    expect(verdict(x64, I386, 310, CLONE_NEWUSER)).toBe(ENOSYS); // i386's unshare
    expect(verdict(x64, I386, 20)).toBe(ENOSYS); // i386's getpid
    expect(verdict(x64, X64, 0x4000_0000 | 272, CLONE_NEWUSER)).toBe(ENOSYS); // x32's unshare
    expect(verdict(x64, X64, 0x4000_0000 | 39)).toBe(ENOSYS);
    expect(verdict(x64, AARCH64, 97, CLONE_NEWUSER)).toBe(ENOSYS);
    expect(verdict(arm64, X64, 39)).toBe(ENOSYS);
  });

  it("has no program for a machine it does not know", () => {
    expect(seccompProgram("riscv64")).toBeUndefined();
    expect(seccompProgram("ia32")).toBeUndefined();
  });
});

const detected = detectSandbox();
const rooted = detected.kind === "bubblewrap" && process.getuid?.() === 0;
const bwrap = () => execFileSync("/bin/sh", ["-c", "command -v bwrap"], { encoding: "utf8" });

const PROBE = `
import { spawnSync } from "node:child_process";
import { readdirSync, readlinkSync } from "node:fs";
import { Worker } from "node:worker_threads";
export function sh({ cmd }) {
  const r = spawnSync("/bin/sh", ["-c", cmd], { encoding: "utf8" });
  return { status: r.status, out: (r.stdout + r.stderr).trim() };
}
export function node() {
  return spawnSync(process.execPath, ["-e", "console.log('child')"], { encoding: "utf8" }).stdout.trim();
}
export function thread() {
  return new Promise((resolve, reject) => {
    const worker = new Worker("require('node:worker_threads').parentPort.postMessage('thread')", { eval: true });
    worker.once("message", resolve);
    worker.once("error", reject);
  });
}
export function fds() {
  return readdirSync("/proc/self/fd").map((fd) => { try { return readlinkSync("/proc/self/fd/" + fd); } catch { return ""; } });
}
`;

const WEB = `
const { spawnSync } = require("node:child_process");
require("node:http").createServer((req, res) => {
  const r = spawnSync("unshare", ["-U", "true"], { encoding: "utf8" });
  res.end(r.status + " " + r.stderr.trim());
}).listen(Number(process.env.PORT), "127.0.0.1");
`;

describe.skipIf(detected.kind !== "bubblewrap")("no user namespaces in a replica", () => {
  const modes: Array<[string, () => Sandbox]> = [
    // bwrap --unshare-user, as where the host is not root.
    [
      "root of bwrap's user namespace",
      () => bubblewrap({ bwrap: bwrap().trim(), seccomp: seccompProgram() }),
    ],
  ];
  if (rooted) modes.unshift(["a host user of its own", () => detected]);

  describe.each(modes)("as %s", (_mode, sandboxOf) => {
    let home: string;
    let host: RunningHost;
    const call = async (fn: string, input: unknown = null) => {
      const res = await hostClient(host.url).invoke("p", "probe", fn, JSON.stringify(input));
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body.result;
    };

    beforeAll(async () => {
      home = await newHome();
      host = await startTestHost(home, { sandbox: sandboxOf() });
      const client = hostClient(host.url);
      expect((await client.deploy("p", "probe", 1, { "main.mjs": PROBE })).status).toBe(200);
      const web = configOf("web", {
        runtime: "custom",
        custom: { entrypoint: ["node", "server.js"], healthcheck: "/" },
      });
      expect((await client.deploy("p", "web", 1, { "server.js": WEB }, web)).status).toBe(200);
    }, 30_000);

    afterAll(async () => {
      await host?.close();
      await removeHome(home);
    });

    it("refuses a new user namespace: unshare -U and -Ur fail with EPERM", async () => {
      for (const cmd of ["unshare -U true", "unshare -Ur true", "unshare -Urm true"]) {
        expect(await call("sh", { cmd })).toEqual({
          status: 1,
          out: expect.stringContaining("Operation not permitted"),
        });
      }
      // So no tmpfs of the app's own past the bounded /tmp.
      const mount = (await call("sh", { cmd: "unshare -Urm mount -t tmpfs none /tmp" })) as {
        status: number;
      };
      expect(mount.status).not.toBe(0);
    });

    it("still starts processes and threads, and serves calls", async () => {
      expect(await call("sh", { cmd: "sh -c 'echo forked'" })).toEqual({
        status: 0,
        out: "forked",
      });
      expect(await call("node")).toBe("child");
      expect(await call("thread")).toBe("thread");
      // bwrap read the filter and closed it: the app holds no descriptor of it.
      expect((await call("fds")) as string[]).not.toContainEqual(
        expect.stringContaining("runlet-seccomp"),
      );
    });

    it("refuses it to a custom app too", async () => {
      const res = await fetch(`${host.url}/internal/http/p/web/`, {
        headers: { authorization: `Bearer ${TOKEN}`, "x-runlet-run-id": "run_w" },
      });
      expect(res.status).toBe(200);
      expect(await res.text()).toMatch(/^1 unshare: .*Operation not permitted/);
    });
  });
});
