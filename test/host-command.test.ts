// `runlet host` as a user runs it (docs/hosts.md, "Running a host on another machine"): the
// command joined to a real control plane on a loopback socket, its runtime host a child process.
// When the command itself is killed outright (SIGKILL, the OOM killer), its host ends too and
// frees its port. Before, the host ran on as an orphan holding the port: the next `runlet host`
// on it failed with EADDRINUSE, and the registry still listed a host no one could stop by Ctrl-C.
// Ctrl-C in its terminal (SIGINT to the command's process group) gives work in flight its grace:
// before, the host had that SIGINT from the terminal and a second one from the command, which
// ended the grace at once, and a run in flight failed. So stopped, the host tells the registry it
// left: `runlet hosts` shows it `stopped`, holding no replica, where before it read `down` after
// 15 s of silence as a host that crashed (and held its places of max_replicas until then). One
// killed outright does not: it goes `down`.
import type { ChildProcess } from "node:child_process";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, expect, it } from "vitest";
import { freePort, portIsFree } from "../cli/processes.ts";
import { DOWN_AFTER_MS } from "../common/protocol/hosts.ts";
import { hosts, users } from "../control-plane/db/schema.ts";
import { httpRuntimeHosts } from "../control-plane/host-client.ts";
import { liveHosts } from "../control-plane/hosts/registry.ts";
import { createHostToken } from "../control-plane/hosts/tokens.ts";
import { serveControlPlane } from "../control-plane/listen.ts";
import { INTERNAL_TOKEN, memoryBundles } from "../control-plane/testing/fixture.ts";
import { libsqlFixture } from "../control-plane/testing/libsql.ts";
import {
  bundle,
  eventually,
  hostClient,
  newHome,
  removeHome,
} from "../runtime-host/test-support.ts";
import { BIN, isAlive, pidOnPort } from "./harness.ts";
import { hostListening, spawnHost } from "./host-process.ts";

let f: Awaited<ReturnType<typeof libsqlFixture>>;
let server: Server;
let controlPlaneUrl: string;
const commands: ChildProcess[] = [];
const hostPids: number[] = [];
const homes: string[] = [];

beforeAll(async () => {
  f = await libsqlFixture({
    bundles: memoryBundles(),
    hosts: httpRuntimeHosts(() => liveHosts(f.db), INTERNAL_TOKEN),
  });
  await f.db.update(users).set({ operator: true }).where(eq(users.id, f.owner.id));
  server = serveControlPlane(f.app, { port: 0, hostname: "127.0.0.1" });
  await new Promise<void>((resolve) => server.once("listening", resolve));
  controlPlaneUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  // Whatever the test found, nothing it started outlives it.
  for (const command of commands)
    if (command.exitCode === null && command.signalCode === null) command.kill("SIGKILL");
  for (const pid of hostPids) if (isAlive(pid)) process.kill(pid, "SIGKILL");
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await f.cleanup();
  await Promise.all(homes.map(removeHome));
});

/**
 * `runlet host` joined as `name`, its host listening; `detached`: in a process group of its own,
 * as a shell runs a command in the foreground of a terminal.
 */
async function runletHost(name: string, detached = false) {
  const { token } = await createHostToken(f.db, { name, createdBy: f.owner.id });
  const home = await newHome();
  homes.push(home);
  const port = await freePort();
  const out = spawnHost(
    process.execPath,
    [BIN, "host", "--control-plane", controlPlaneUrl, "--port", String(port), "--name", name],
    { RUNLET_HOME: home, RUNLET_HOST_TOKEN: token, RUNLET_SANDBOX: "off" },
    detached,
  );
  const command = out.child;
  commands.push(command);
  await hostListening(out, 60_000);
  const hostPid = pidOnPort(port);
  expect(hostPid, out.log).toBeDefined();
  expect(hostPid).not.toBe(command.pid);
  hostPids.push(hostPid as number);
  return { command, port, hostPid: hostPid as number, out };
}

it("a runlet host killed with SIGKILL takes its runtime host with it, and the port is free again", async () => {
  const { command, port, hostPid: pid, out } = await runletHost("rack-9");
  const exited = new Promise((resolve) => command.once("exit", resolve));
  command.kill("SIGKILL");
  await exited;

  await eventually(
    async () => !isAlive(pid) && (await portIsFree(port, "127.0.0.1")),
    (gone) => gone,
    30_000,
  );
  expect(isAlive(pid), out.log).toBe(false);
  expect(await portIsFree(port, "127.0.0.1")).toBe(true);
  // It did not stop gracefully: to the registry it is a host gone silent, down once 15 s pass.
  const id = (await registered("rack-9"))?.id as string;
  await f.db
    .update(hosts)
    .set({ seenAt: Date.now() - DOWN_AFTER_MS - 1_000 })
    .where(eq(hosts.id, id));
  expect(await registered("rack-9")).toMatchObject({ state: "down" });
});

it("Ctrl-C in its terminal lets a run in flight finish within the grace, then the host ends", async () => {
  const { command, port, out } = await runletHost("rack-7", true);
  const main =
    "export const run = async ({ ms }) => { await new Promise((r) => setTimeout(r, ms)); return 'done'; };";
  const files = bundle({ "runlet.toml": 'name = "graceful"\n', "main.mjs": main });
  expect(
    (await f.call("POST", `/v2/projects/${f.projectId}/apps`, { body: { files } })).status,
  ).toBe(201);
  const host = hostClient(`http://127.0.0.1:${port}`, INTERNAL_TOKEN);
  const call = host.invoke(f.projectId, "graceful", "run", JSON.stringify({ ms: 3_000 }));
  await eventually(
    () => host.metrics(),
    (apps) => apps.some((a) => a.app === "graceful" && a.replicas.some((r) => r.active > 0)),
    30_000,
  );

  // Its heartbeat holds the replica's place of max_replicas.
  await eventually(
    () => registered("rack-7"),
    (h) => h?.state === "up" && h.apps.length === 1,
    30_000,
  );

  const exited = new Promise<number | null>((resolve) => command.once("exit", resolve));
  process.kill(-(command.pid as number), "SIGINT"); // what the terminal sends on Ctrl-C
  expect(await call, out.log).toMatchObject({ status: 200, body: { ok: true, result: "done" } });
  expect(await exited, out.log).toBe(0);
  // It said it left: stopped, not down, holding no replica, and no place the Worker sends work.
  expect(await registered("rack-7"), out.log).toMatchObject({ state: "stopped", apps: [] });
  expect(await liveHosts(f.db)).not.toContainEqual(
    expect.objectContaining({ address: `http://127.0.0.1:${port}` }),
  );
});

/** The host `runlet host --name name` registered, as the operator's listing has it. */
async function registered(name: string) {
  const res = await f.call("GET", "/v2/hosts");
  expect(res.status).toBe(200);
  const { hosts: all } = (await res.json()) as {
    hosts: Array<{ id: string; name: string; state: string; apps: unknown[] }>;
  };
  return all.find((h) => h.name === name);
}
