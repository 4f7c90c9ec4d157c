// What a replica can reach and use, for real, where the host runs as root with bubblewrap (CI):
// a host user of its own, a network of its own (no loopback of the host, no other replica, no
// private ranges unless allowed, the internet through slirp4netns), bounded folders. "The
// internet" is a server in a network namespace this test makes (`ip netns` + veth, addresses of
// its choosing); no traffic goes anywhere else.
import { type ChildProcess, execFileSync, spawn, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { createServer as createHttpServer } from "node:http";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
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
import { ESCAPE_PROBE_MAIN } from "./escape-probe.ts";
import { parseCidr } from "./network.ts";
import { DEFAULT_SANDBOX_SETTINGS, detectSandbox, SANDBOX_LIMITS } from "./sandbox.ts";

const sandbox = detectSandbox();
const rooted = sandbox.kind === "bubblewrap" && process.getuid?.() === 0;

/** The test's own "internet": a namespace with an address of a public-use and a private range. */
const NS = `rlt-${process.pid}`;
const VETH = `rlt${process.pid % 100_000}`;
const PUBLIC = { host: "198.18.77.1", far: "198.18.77.2" };
const PRIVATE = { host: "10.213.77.1", far: "10.213.77.2", range: "10.213.77.0/24" };
const FAR_PORT = 8080;

const PROBE = { "main.mjs": ESCAPE_PROBE_MAIN };

const WEB = `
require("node:http").createServer((req, res) => res.end(process.env.PORT + " " + process.getuid()))
  .listen(Number(process.env.PORT), "127.0.0.1");
`;

const python = spawnSync("python3", ["--version"]).status === 0;

// A custom app that points its relay's socket (in the folder it shares with the host) at
// another socket of the host's, then kills its relay so that the host connects anew.
const SWAP = `
const fs = require("node:fs");
require("node:http").createServer((req, res) => {
  if (!req.url.startsWith("/swap/")) return res.end("app");
  fs.rmSync("/run/runlet/http.sock");
  fs.symlinkSync(decodeURIComponent(req.url.slice(6)), "/run/runlet/http.sock");
  const relay = fs.readdirSync("/proc").find((pid) => /^[0-9]+$/.test(pid) &&
    fs.readFileSync("/proc/" + pid + "/cmdline", "utf8").split("\\0")[1]?.endsWith("relay.mjs"));
  res.end("swapped", () => setTimeout(() => process.kill(Number(relay), "SIGKILL"), 100));
}).listen(Number(process.env.PORT), "127.0.0.1");
`;

const sh = (command: string) => execFileSync("/bin/sh", ["-c", command], { stdio: "pipe" });

describe.skipIf(!rooted)("a replica's own user, network and folders", () => {
  let home: string;
  let allowingHome: string;
  let host: RunningHost;
  let allowing: RunningHost;
  let loopback: Server;
  let far: ChildProcess;

  const web = async () => {
    const res = await fetch(`${host.url}/internal/http/p/web/`, {
      headers: { authorization: `Bearer ${TOKEN}`, "x-runlet-run-id": "run_w" },
    });
    return res.text();
  };
  const call = async (on: RunningHost, app: string, fn: string, input: unknown = null) => {
    const res = await hostClient(on.url).invoke("p", app, fn, JSON.stringify(input));
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.result as Record<string, unknown> | string;
  };

  beforeAll(async () => {
    sh(
      [
        `ip netns add ${NS}`,
        `ip link add ${VETH}a type veth peer name ${VETH}b`,
        `ip link set ${VETH}b netns ${NS}`,
        `ip addr add ${PUBLIC.host}/24 dev ${VETH}a`,
        `ip addr add ${PRIVATE.host}/24 dev ${VETH}a`,
        `ip link set ${VETH}a up`,
        `ip -n ${NS} addr add ${PUBLIC.far}/24 dev ${VETH}b`,
        `ip -n ${NS} addr add ${PRIVATE.far}/24 dev ${VETH}b`,
        `ip -n ${NS} link set ${VETH}b up`,
        `ip -n ${NS} link set lo up`,
      ].join(" && "),
    );
    far = spawn("ip", [
      "netns",
      "exec",
      NS,
      process.execPath,
      "-e",
      `require("node:net").createServer((s) => s.end("far")).listen(${FAR_PORT}, "0.0.0.0", () => console.log("up"))`,
    ]);
    await new Promise((resolve) => far.stdout?.once("data", resolve));
    // Something of the host's on its loopback, as the control plane and the Worker are.
    loopback = createServer((s) => s.end("host"));
    await new Promise<void>((resolve) => loopback.listen(0, "127.0.0.1", resolve));

    home = await newHome();
    await writeFile(join(home, "internal-token"), "the host's secret");
    host = await startTestHost(home, { sandbox });
    const allowed = detectSandbox({
      ...DEFAULT_SANDBOX_SETTINGS,
      allowNets: [parseCidr(PRIVATE.range)],
    });
    allowingHome = await newHome();
    allowing = await startTestHost(allowingHome, { sandbox: allowed });
    for (const on of [host, allowing]) {
      expect((await hostClient(on.url).deploy("p", "probe", 1, PROBE)).status).toBe(200);
    }
    const web = configOf("web", {
      runtime: "custom",
      custom: { entrypoint: ["node", "server.js"], healthcheck: "/" },
    });
    expect(
      (await hostClient(host.url).deploy("p", "web", 1, { "server.js": WEB }, web)).status,
    ).toBe(200);
    const swap = configOf("swap", {
      runtime: "custom",
      custom: { entrypoint: ["node", "server.js"], healthcheck: "/" },
    });
    expect(
      (await hostClient(host.url).deploy("p", "swap", 1, { "server.js": SWAP }, swap)).status,
    ).toBe(200);
  }, 30_000);

  afterAll(async () => {
    await Promise.all([host?.close(), allowing?.close()]);
    loopback?.close();
    far?.kill();
    sh(`ip netns delete ${NS} 2>/dev/null; ip link delete ${VETH}a 2>/dev/null; true`);
    await Promise.all([removeHome(home), removeHome(allowingHome)]);
  });

  it("runs each replica as an unprivileged host user of its own", async () => {
    const probe = (await call(host, "probe", "who")) as { uid: number };
    expect(probe.uid).toBeGreaterThanOrEqual(1_900_000_000);
    const [port, webUid] = (await web()).split(" ").map(Number);
    expect(port).toBe(8000); // the app's own [custom] port: its namespace has no one else
    expect(webUid).toBeGreaterThanOrEqual(1_900_000_000);
    expect(webUid).not.toBe(probe.uid);
  });

  it("reaches nothing on the host's loopback: not the host, the runtime host, nor another app", async () => {
    const hostPort = Number(new URL(host.url).port);
    const { port } = loopback.address() as { port: number };
    for (const target of [port, hostPort]) {
      expect(await call(host, "probe", "connectTo", { host: "127.0.0.1", port: target })).toBe(
        "ECONNREFUSED",
      );
    }
    // The custom app answers through the host, on 127.0.0.1:8000 of its own namespace; that
    // address in the probe's namespace is nobody.
    expect(await web()).toMatch(/^8000 /);
    expect(await call(host, "probe", "connectTo", { host: "127.0.0.1", port: 8000 })).toBe(
      "ECONNREFUSED",
    );
  });

  it("cannot point the host at another socket of the machine through its relay's folder", async () => {
    // A root-only socket of the host's, as Docker's or another replica's relay is.
    const victimPath = join(home, "victim.sock");
    const victim = createHttpServer((_req, res) => res.end("victim"));
    await new Promise<void>((resolve) => victim.listen(victimPath, resolve));
    const get = (path: string) =>
      fetch(`${host.url}/internal/http/p/swap${path}`, {
        headers: { authorization: `Bearer ${TOKEN}`, "x-runlet-run-id": "run_s" },
      });
    try {
      const swapped = await get(`/swap/${encodeURIComponent(victimPath)}`);
      expect(await swapped.text()).toBe("swapped");
      await new Promise((r) => setTimeout(r, 300)); // the relay is killed
      for (let i = 0; i < 3; i++) expect(await (await get("/")).text()).not.toBe("victim");
    } finally {
      victim.close();
    }
  });

  it("reaches the outside, but no private range unless the operator allows it", async () => {
    const to = (address: string) => ({ host: address, port: FAR_PORT });
    expect(await call(host, "probe", "connectTo", to(PUBLIC.far))).toBe("open");
    expect(await call(host, "probe", "connectTo", to(PRIVATE.far))).toBe("EACCES");
    expect(await call(allowing, "probe", "connectTo", to(PRIVATE.far))).toBe("open");
    // The rest of 10/8 stays refused on the host that allows one range.
    expect(await call(allowing, "probe", "connectTo", to("10.214.0.1"))).toBe("EACCES");
  });

  it("stops a fork loop at the replica's process limit while the host and other apps answer", async () => {
    const loop = (await call(host, "probe", "forkLoop")) as { started: number; refused: string };
    expect(loop.refused).toBe("EAGAIN");
    expect(loop.started).toBeLessThan(SANDBOX_LIMITS.processes);
    expect(await web()).toMatch(/^8000 /);
    expect((await fetch(`${host.url}/healthz`)).status).toBe(200);
  });

  it.skipIf(!python)("bounds all of a replica's memory, shared mappings included", async () => {
    // 1 GiB of RLIMIT_DATA per process did not count them: 2.5 GiB were mapped and touched.
    const mib = SANDBOX_LIMITS.memoryBytes / 2 ** 20 + 512;
    const hog = (await call(host, "probe", "sharedHog", { mib })) as Record<string, unknown>;
    expect(hog, JSON.stringify(hog)).toMatchObject({ signal: "SIGKILL" });
    expect(hog.reachedMiB).toBeLessThanOrEqual(SANDBOX_LIMITS.memoryBytes / 2 ** 20);
    expect(await call(host, "probe", "who")).toMatchObject({ uid: expect.any(Number) });
  });

  it("bounds /tmp and the app's folder: filling them fails that app, and others answer on", async () => {
    const tmp = (await call(host, "probe", "fill", { path: "/tmp/big" })) as { mib: number };
    expect(tmp).toMatchObject({ code: "ENOSPC" });
    expect(tmp.mib).toBeLessThanOrEqual(SANDBOX_LIMITS.tmpBytes / 2 ** 20);
    const own = (await call(host, "probe", "fill", { path: "big" })) as { mib: number };
    expect(own).toMatchObject({ code: "ENOSPC" });
    expect(own.mib).toBeLessThanOrEqual(SANDBOX_LIMITS.folderBytes / 2 ** 20);
    expect(await web()).toMatch(/^8000 /);
    expect(await call(allowing, "probe", "who")).toMatchObject({ gid: expect.any(Number) });
  });

  it("leaves no mount behind a host stopped while its spares start", async () => {
    const quick = await newHome();
    const stopped = await startTestHost(quick, { sandbox });
    await stopped.close(); // its spares' sandboxes are still being made
    const mounts = readFileSync("/proc/self/mountinfo", "utf8");
    expect(mounts).not.toContain(quick);
    await removeHome(quick); // EBUSY if a slot were still mounted
  });
});
