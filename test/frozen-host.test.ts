// max_replicas over all hosts when a host is frozen and comes back (docs/hosts.md, "Replicas
// over all hosts"): a real control plane, one runtime host in this process and one in a child
// process stopped with SIGSTOP. Once the registry has the frozen one down, its replicas no
// longer count and the other host is granted them; thawed (SIGCONT), the frozen host hears at
// its next heartbeat that it may keep none, and retires them: the app runs 5 replicas of 3 only
// for a moment. Before, it kept them, and the app ran 5 replicas for good.
import type { ChildProcess } from "node:child_process";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { freePort } from "../cli/processes.ts";
import { DOWN_AFTER_MS, HEARTBEAT_MS } from "../common/protocol/hosts.ts";
import { httpRuntimeHosts } from "../control-plane/host-client.ts";
import { liveHosts } from "../control-plane/hosts/registry.ts";
import { createHostToken } from "../control-plane/hosts/tokens.ts";
import { serveControlPlane } from "../control-plane/listen.ts";
import { INTERNAL_TOKEN, memoryBundles } from "../control-plane/testing/fixture.ts";
import { libsqlFixture } from "../control-plane/testing/libsql.ts";
import type { RunningHost } from "../runtime-host/server.ts";
import {
  eventually,
  hostClient,
  newHome,
  removeHome,
  startTestHost,
} from "../runtime-host/test-support.ts";
import { hostListening, spawnHost } from "./host-process.ts";

let f: Awaited<ReturnType<typeof libsqlFixture>>;
let server: Server;
let controlPlaneUrl: string;
let frozen: ChildProcess | undefined;
let other: RunningHost | undefined;
const homes: string[] = [];

beforeAll(async () => {
  const bundles = memoryBundles();
  f = await libsqlFixture({
    bundles,
    hosts: httpRuntimeHosts(() => liveHosts(f.db), INTERNAL_TOKEN),
  });
  server = serveControlPlane(f.app, { port: 0, hostname: "127.0.0.1" });
  await new Promise<void>((resolve) => server.once("listening", resolve));
  controlPlaneUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  if (frozen && frozen.exitCode === null) {
    const exited = new Promise((resolve) => frozen?.once("exit", resolve));
    frozen.kill("SIGCONT");
    frozen.kill("SIGTERM");
    const timer = setTimeout(() => frozen?.kill("SIGKILL"), 15_000);
    await exited;
    clearTimeout(timer);
  }
  await other?.close();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await f.cleanup();
  await Promise.all(homes.map(removeHome));
});

/** A runtime host in a process of its own, joined to the control plane, at `url`. */
async function childHost(hostToken: string): Promise<string> {
  const home = await newHome();
  homes.push(home);
  const port = await freePort();
  const host = spawnHost(process.execPath, ["bin/run-ts.mjs", "runtime-host/main.ts"], {
    RUNLET_HOME: home,
    RUNLET_HOST_PORT: String(port),
    RUNLET_BASE_URL: controlPlaneUrl,
    RUNLET_HOST_TOKEN: hostToken,
    RUNLET_HOST_NAME: "frozen",
    RUNLET_SANDBOX: "off",
  });
  frozen = host.child;
  await hostListening(host);
  return `http://127.0.0.1:${port}`;
}

/** Deploys `main.mjs` as a new version of `app` through the management API. */
async function deploy(app: string, main: string, toml: string): Promise<void> {
  const files = [
    ["runlet.toml", `name = "${app}"\n${toml}`],
    ["main.mjs", main],
  ].map(([path, text]) => ({
    path,
    contentBase64: Buffer.from(text as string).toString("base64"),
  }));
  const res = await f.call("POST", `/v2/projects/${f.projectId}/apps`, { body: { files } });
  expect(res.status).toBe(201);
}

/** The registry's state of the host at `address`, as the Worker reads it. */
async function stateOf(address: string): Promise<string | undefined> {
  const res = await f.call("GET", "/internal/hosts", { token: INTERNAL_TOKEN });
  const { hosts } = (await res.json()) as { hosts: Array<{ address: string; state: string }> };
  return hosts.find((h) => h.address === address)?.state;
}

it("a host frozen and thawed keeps only the replicas max_replicas leaves it over all hosts", async () => {
  const { token } = await createHostToken(f.db, { name: "pair", createdBy: f.owner.id });
  const frozenUrl = await childHost(token);
  const home = await newHome();
  homes.push(home);
  other = await startTestHost(home, {
    internalToken: undefined,
    join: { controlPlaneUrl, hostToken: () => token, name: "other", slots: 8, memoryMb: 1024 },
  });
  await eventually(
    () => stateOf(frozenUrl),
    (s) => s === "up",
    10_000,
  );

  const main =
    "export const run = async ({ ms }) => { await new Promise((r) => setTimeout(r, ms)); return 1; };";
  const scaling =
    "[scaling]\nmax_replicas = 3\nmin_replicas = 1\nreplica_concurrency = 1\ncooldown = 600\n";
  await deploy("thawing", main, scaling);
  const on = (url: string) => hostClient(url, INTERNAL_TOKEN);
  const call = (url: string, ms: number) =>
    on(url).invoke(f.projectId, "thawing", "run", JSON.stringify({ ms }));
  const replicasOn = async (url: string) =>
    (await on(url).metrics())
      .filter((a) => a.app === "thawing")
      .reduce((n, a) => n + a.replicas.length, 0);

  // Two replicas on the host about to freeze, and one on the other (its own, or the warm one).
  const first = await Promise.all([call(frozenUrl, 300), call(frozenUrl, 300)]);
  expect(first.map((r) => r.status)).toEqual([200, 200]);
  expect(await replicasOn(frozenUrl)).toBe(2);
  expect((await call(other.url, 1)).status).toBe(200);
  expect(await replicasOn(other.url)).toBe(1);

  // Frozen: down after 15 s, its two no longer count, and the other host is granted three.
  frozen?.kill("SIGSTOP");
  await eventually(
    () => stateOf(frozenUrl),
    (s) => s === "down",
    DOWN_AFTER_MS + 3 * HEARTBEAT_MS,
  );
  const burst = await Promise.all([1, 2, 3].map(() => call(other?.url as string, 300)));
  expect(burst.map((r) => r.status)).toEqual([200, 200, 200]);
  expect(await replicasOn(other.url)).toBe(3);

  // Thawed: five run until its next heartbeat's answer, then it retires its two.
  frozen?.kill("SIGCONT");
  await eventually(
    () => stateOf(frozenUrl),
    (s) => s === "up",
    3 * HEARTBEAT_MS,
  );
  expect(
    await eventually(
      () => replicasOn(frozenUrl),
      (n) => n === 0,
      3 * HEARTBEAT_MS,
    ),
  ).toBe(0);
  expect(await replicasOn(other.url)).toBe(3);
  // Its calls go to the other host's replicas: none starts here while they are the app's three.
  const refused = await call(frozenUrl, 1);
  expect(refused.status).toBe(429);
  expect(await replicasOn(frozenUrl)).toBe(0);
}, 60_000);
