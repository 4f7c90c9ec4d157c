/**
 * The `main.mjs` of an app that tries to get out of its sandbox, for the isolation tests and
 * `npm run chaos`: each export is one attempt, and `run({op, ...})` calls the export `op` (the
 * function the run API calls by default).
 */
export const ESCAPE_PROBE_MAIN = `
import { spawn, spawnSync } from "node:child_process";
import { closeSync, openSync, writeSync } from "node:fs";
import { connect } from "node:net";
export function connectTo({ host, port }) {
  return new Promise((resolve) => {
    const socket = connect(port, host);
    socket.setTimeout(3000, () => { socket.destroy(); resolve("timeout"); });
    socket.on("connect", () => { socket.destroy(); resolve("open"); });
    socket.on("error", (e) => resolve(e.code));
  });
}
export async function forkLoop() {
  const children = [];
  let refused = null;
  for (let i = 0; i < 1000 && !refused; i++) {
    const child = spawn("/bin/sleep", ["30"], { stdio: "ignore" });
    await new Promise((resolve) => { child.once("spawn", resolve); child.once("error", (e) => { refused = e.code; resolve(); }); });
    if (!refused) children.push(child);
  }
  // Gone and reaped before the answer: until then they count against the replica user's process
  // limit, and the next call's own child could not start (EAGAIN).
  await Promise.all(children.map((child) => new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once("exit", resolve);
    child.kill("SIGKILL");
  })));
  return { started: children.length, refused };
}
export function who() { return { uid: process.getuid(), gid: process.getgid() }; }
export function fill({ path }) {
  const fd = openSync(path, "w");
  const chunk = Buffer.alloc(1024 * 1024, 1);
  let mib = 0;
  try { for (; mib < 2048; mib++) writeSync(fd, chunk); return { mib, code: "none" }; }
  catch (e) { return { mib, code: e.code }; }
  finally { closeSync(fd); }
}
export function hog() {
  const kept = [];
  for (;;) kept.push(Buffer.alloc(64 * 1024 * 1024, 1));
}
// Shared memory (python's anonymous mmap is MAP_SHARED), which RLIMIT_DATA does not count:
// touched 256 MiB at a time up to \`mib\`, saying how far it got and how it ended.
const SHARED_HOG = "import mmap,sys\\nkept=[]\\nfor i in range(int(sys.argv[1])//256):\\n m=mmap.mmap(-1,256<<20)\\n for j in range(0,256<<20,4096): m[j]=1\\n kept.append(m)\\n print((i+1)*256,flush=True)\\n";
export function sharedHog({ mib }) {
  const child = spawnSync("python3", ["-c", SHARED_HOG, String(mib)], { encoding: "utf8" });
  if (child.error) return { error: child.error.code };
  const lines = child.stdout.trim().split("\\n");
  return { reachedMiB: Number(lines[lines.length - 1] || 0), signal: child.signal };
}
const ops = { connectTo, forkLoop, who, fill, hog, sharedHog };
export async function run(input) { return ops[input.op](input); }
`;
