// `runlet host` as a user runs it (docs/hosts.md, "Running a host on another machine"): the
// command joined to a real control plane on a loopback socket, its runtime host a child process.
// When the command itself is killed outright (SIGKILL, the OOM killer), its host ends too and
// frees its port. Before, the host ran on as an orphan holding the port: the next `runlet host`
// on it failed with EADDRINUSE, and the registry still listed a host no one could stop by Ctrl-C.
import { type ChildProcess, spawn } from "node:child_process";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { freePort, portIsFree } from "../cli/processes.ts";
import { httpRuntimeHosts } from "../control-plane/host-client.ts";
import { createHostToken, liveHosts } from "../control-plane/hosts/registry.ts";
import { serveControlPlane } from "../control-plane/listen.ts";
import { INTERNAL_TOKEN, memoryBundles } from "../control-plane/testing/fixture.ts";
import { libsqlFixture } from "../control-plane/testing/libsql.ts";
import { eventually, newHome, removeHome } from "../runtime-host/test-support.ts";
import { BIN, isAlive, pidOnPort, ROOT } from "./harness.ts";

let f: Awaited<ReturnType<typeof libsqlFixture>>;
let server: Server;
let controlPlaneUrl: string;
let command: ChildProcess | undefined;
let hostPid: number | undefined;
const homes: string[] = [];

beforeAll(async () => {
  f = await libsqlFixture({
    bundles: memoryBundles(),
    hosts: httpRuntimeHosts(() => liveHosts(f.db), INTERNAL_TOKEN),
  });
  server = serveControlPlane(f.app, { port: 0, hostname: "127.0.0.1" });
  await new Promise<void>((resolve) => server.once("listening", resolve));
  controlPlaneUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  // Whatever the test found, nothing it started outlives it.
  if (command?.exitCode === null && command.signalCode === null) command.kill("SIGKILL");
  if (hostPid !== undefined && isAlive(hostPid)) process.kill(hostPid, "SIGKILL");
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await f.cleanup();
  await Promise.all(homes.map(removeHome));
});

it("a runlet host killed with SIGKILL takes its runtime host with it, and the port is free again", async () => {
  const { token } = await createHostToken(f.db, { name: "rack-9", createdBy: f.owner.id });
  const home = await newHome();
  homes.push(home);
  const port = await freePort();
  let log = "";
  command = spawn(
    process.execPath,
    [BIN, "host", "--control-plane", controlPlaneUrl, "--port", String(port), "--name", "rack-9"],
    {
      cwd: ROOT,
      env: { ...process.env, RUNLET_HOME: home, RUNLET_HOST_TOKEN: token, RUNLET_SANDBOX: "off" },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  for (const out of [command.stdout, command.stderr])
    out?.on("data", (d) => {
      log += d;
    });
  await eventually(
    async () => log,
    (text) => /runtime host listening/.test(text) || command?.exitCode !== null,
    60_000,
  );
  expect(log).toMatch(/runtime host listening/);
  hostPid = pidOnPort(port);
  expect(hostPid, log).toBeDefined();
  expect(hostPid).not.toBe(command.pid);

  const exited = new Promise((resolve) => command?.once("exit", resolve));
  command.kill("SIGKILL");
  await exited;

  const pid = hostPid as number;
  await eventually(
    async () => !isAlive(pid) && (await portIsFree(port, "127.0.0.1")),
    (gone) => gone,
    30_000,
  );
  expect(isAlive(pid), log).toBe(false);
  expect(await portIsFree(port, "127.0.0.1")).toBe(true);
});
