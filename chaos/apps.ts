/** The apps the chaos scenarios deploy: a sleeper, a probe that tries to get out, a custom server. */
import { sleeper } from "../test/apps.ts";

export const SLOW = sleeper([
  'name = "slow"',
  'runtime = "managed"',
  "response_grace_period = 600",
  "[scaling]",
  "max_replicas = 2",
]);

/** `run({op, ...})`: connect somewhere, fork until refused, fill a file, or allocate forever. */
export const PROBE = {
  "runlet.toml": 'name = "probe"\nruntime = "managed"\n',
  "main.mjs": `
import { spawn } from "node:child_process";
import { closeSync, openSync, writeSync } from "node:fs";
import { connect } from "node:net";
const ops = {
  connect: ({ host, port }) => new Promise((resolve) => {
    const socket = connect(port, host);
    socket.setTimeout(3000, () => { socket.destroy(); resolve("timeout"); });
    socket.on("connect", () => { socket.destroy(); resolve("open"); });
    socket.on("error", (e) => resolve(e.code));
  }),
  async forkLoop() {
    const children = [];
    let refused = null;
    for (let i = 0; i < 1000 && !refused; i++) {
      const child = spawn("/bin/sleep", ["30"], { stdio: "ignore" });
      await new Promise((r) => { child.once("spawn", r); child.once("error", (e) => { refused = e.code; r(); }); });
      if (!refused) children.push(child);
    }
    for (const child of children) child.kill("SIGKILL");
    return { started: children.length, refused };
  },
  fill({ path }) {
    const fd = openSync(path, "w");
    const mib = Buffer.alloc(1024 * 1024, 1);
    let n = 0;
    try { for (; n < 4096; n++) writeSync(fd, mib); return { mib: n, code: "none" }; }
    catch (e) { return { mib: n, code: e.code }; }
    finally { closeSync(fd); }
  },
  hog() {
    const kept = [];
    for (;;) kept.push(Buffer.alloc(64 * 1024 * 1024, 1));
  },
};
export async function run(input) { return ops[input.op](input); }
`,
};

/** A custom app: answers its PORT (its own namespace's loopback). */
export const WEB = {
  "runlet.toml": [
    'name = "web"',
    'runtime = "custom"',
    "[custom]",
    'entrypoint = ["node", "server.js"]',
    'healthcheck = "/"',
    "",
  ].join("\n"),
  "server.js": `require("node:http").createServer((req, res) => res.end("web " + process.env.PORT))
  .listen(Number(process.env.PORT), "127.0.0.1");`,
};
