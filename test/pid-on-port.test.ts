// pidOnPort (harness.ts) names the process listening on a port, not a child of it that holds
// the socket too. ss lists every holder, the newest first; a runtime host forks often (spares,
// replicas, their networks), and a child between its fork and its exec holds the host's
// listening socket. silent-host.test.ts took such a child's pid for the host's, once under
// load, and its SIGSTOP and SIGTERM found no process (kill ESRCH).
import { type ChildProcess, spawn } from "node:child_process";
import { afterAll, expect, it } from "vitest";
import { isAlive, pidOnPort } from "./harness.ts";

/** Listens on a port the OS picks, then starts a child that holds the listening socket. */
const LISTENER = `
const { createServer } = require("node:net");
const { spawn } = require("node:child_process");
const server = createServer().listen(0, "127.0.0.1", () => {
  const child = spawn("sleep", ["60"], { stdio: ["ignore", "ignore", "ignore", server._handle.fd] });
  console.log(JSON.stringify({ port: server.address().port, child: child.pid }));
});
`;

let listener: ChildProcess | undefined;
let child: number | undefined;

afterAll(() => {
  if (child && isAlive(child)) process.kill(child, "SIGKILL");
  listener?.kill("SIGKILL");
});

it("names the listener, not its child that holds the socket too", async () => {
  listener = spawn(process.execPath, ["-e", LISTENER], { stdio: ["ignore", "pipe", "inherit"] });
  const started = await new Promise<{ port: number; child: number }>((resolve, reject) => {
    let out = "";
    listener?.stdout?.on("data", (d) => {
      out += d;
      if (out.includes("\n")) resolve(JSON.parse(out));
    });
    listener?.once("exit", (code) => reject(new Error(`the listener exited ${code}`)));
  });
  child = started.child;
  expect(isAlive(child)).toBe(true);
  expect(pidOnPort(started.port)).toBe(listener.pid);
});
