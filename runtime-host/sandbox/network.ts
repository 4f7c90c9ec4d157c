/**
 * A network namespace of its own for each replica, made by the host (so the app, root of no
 * namespace that owns it, cannot change its routes or rules), with outbound access through
 * slirp4netns: user-mode TCP/IP in the host's namespace, which connects on the app's behalf.
 *
 * What an app reaches: the internet, and nothing of this machine — its own loopback is its
 * own (the control plane, the Worker, the runtime host and other replicas listen on the
 * host's), slirp4netns is told not to map the host's loopback, and policy rules refuse private,
 * link-local and shared ranges and the host's own addresses before any route is looked at
 * (EACCES in the app), unless the operator allows a range (RUNLET_SANDBOX_ALLOW_NETS).
 */
import { type ChildProcess, execFile, spawn, spawnSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { networkInterfaces } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { processAlive } from "../process-alive.ts";

const run = promisify(execFile);

/** Ranges no app reaches unless allowed: private, shared, link-local, reserved, multicast. */
export const REFUSED_RANGES = [
  "0.0.0.0/8",
  "10.0.0.0/8",
  "100.64.0.0/10",
  "169.254.0.0/16",
  "172.16.0.0/12",
  "192.0.0.0/24",
  "192.168.0.0/16",
  "224.0.0.0/4",
  "240.0.0.0/4",
];

/** slirp4netns's network as the app sees it: its gateway and its DNS forwarder. */
export const SLIRP = { gateway: "10.0.2.2", dns: "10.0.2.3" } as const;

const NETNS_DIR = "/run/netns";
const PREFIX = "runlet-";

export interface NetworkTools {
  ip: string;
  nsenter: string;
  /** Without it replicas get a namespace with loopback only. */
  slirp4netns?: string;
  unshare?: string;
}

/** `a.b.c.d/n` (or a bare address, taken as /32), checked; throws on anything else. */
export function parseCidr(text: string): string {
  const match = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})(?:\/(\d{1,2}))?$/.exec(text.trim());
  const octets = match?.slice(1, 5).map(Number) ?? [];
  const bits = Number(match?.[5] ?? 32);
  if (!match || octets.some((o) => o > 255) || bits > 32) {
    throw new Error(`'${text}' is not an IPv4 address or CIDR range (like 10.1.0.0/16)`);
  }
  return `${octets.join(".")}/${bits}`;
}

/** The host's own IPv4 addresses other than loopback: an app reaching them reaches the host. */
function hostAddresses(): string[] {
  const addresses = Object.values(networkInterfaces())
    .flat()
    .flatMap((a) => (a && a.family === "IPv4" && !a.internal ? [`${a.address}/32`] : []));
  // One address on two interfaces is one rule: a second `ip rule add` of it fails (EEXIST).
  return [...new Set(addresses)];
}

export interface ReplicaNetwork {
  /** Runs the rest of the command inside the namespace. */
  prefix: string[];
  cleanup(): void;
}

/** Namespaces made by this process so far: their names' counter, shared by every host in it. */
let made = 0;

export class ReplicaNetworks {
  readonly #rules: string;

  constructor(
    private readonly tools: NetworkTools,
    allow: readonly string[],
  ) {
    const refused = [...REFUSED_RANGES, ...hostAddresses()];
    this.#rules = [
      "link set lo up",
      // The gateway must pass the rules for slirp4netns to route through it; it refuses
      // connections to itself (no host loopback), and its DNS forwarder answers on .3.
      `rule add to ${SLIRP.gateway}/32 lookup main pref 90`,
      `rule add to ${SLIRP.dns}/32 lookup main pref 90`,
      ...allow.map((range) => `rule add to ${range} lookup main pref 95`),
      ...refused.map((range) => `rule add prohibit to ${range} pref 100`),
      "",
    ].join("\n");
    sweepNamespaces(this.tools.ip);
  }

  get outbound(): boolean {
    return this.tools.slirp4netns !== undefined;
  }

  /**
   * A namespace for one replica, its rules in place and (if it can) slirp4netns serving it.
   * Made by child processes, so the host goes on serving meanwhile.
   */
  async create(): Promise<ReplicaNetwork> {
    const name = `${PREFIX}${process.pid}-${made++}`;
    const path = join(NETNS_DIR, name);
    const { ip, nsenter } = this.tools;
    const remove = () => execFile(ip, ["netns", "delete", name], () => {});
    try {
      await run(ip, ["netns", "add", name]);
      const rules = run(ip, ["-n", name, "-batch", "-"]);
      rules.child.stdin?.end(this.#rules);
      await rules;
    } catch (err) {
      remove();
      throw new Error(`cannot make a replica's network: ${(err as { stderr?: string }).stderr}`);
    }
    const slirp = this.#slirp(path);
    return {
      prefix: [nsenter, `--net=${path}`, "--"],
      cleanup: () => {
        slirp?.kill("SIGTERM");
        remove();
      },
    };
  }

  /**
   * slirp4netns for the namespace at `path`: in a mount namespace of its own (its sandbox
   * unmounts what it does not need, which must not reach the host's /run/netns), dropping its
   * capabilities once the tap device is made, and ending when the host does (its exit fd).
   */
  #slirp(path: string): ChildProcess | undefined {
    const { slirp4netns, unshare } = this.tools;
    if (!slirp4netns || !unshare) return undefined;
    const child = spawn(
      unshare,
      [
        "--mount",
        "--propagation",
        "private",
        slirp4netns,
        "--configure",
        "--mtu=65520",
        "--disable-host-loopback",
        "--enable-sandbox",
        "--netns-type=path",
        "--exit-fd=3",
        path,
        "tap0",
      ],
      { stdio: ["ignore", "ignore", "ignore", "pipe"] },
    );
    child.on("error", () => {}); // the app then has loopback only; its runs say why they fail
    return child;
  }
}

/** Deletes the namespaces of hosts that are gone (a host that crashed). */
export function sweepNamespaces(ip = "ip"): void {
  if (!existsSync(NETNS_DIR)) return;
  for (const name of readdirSync(NETNS_DIR)) {
    const pid = Number(/^runlet-(\d+)-\d+$/.exec(name)?.[1]);
    if (pid && !processAlive(pid)) spawnSync(ip, ["netns", "delete", name]);
  }
}
