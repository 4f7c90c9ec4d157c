/**
 * Where replicas run: inside bubblewrap when this machine has it (bubblewrap.ts), and always
 * under resource limits. Without bubblewrap (or with RUNLET_SANDBOX=off) replicas run as plain
 * processes, with one loud warning when the host starts. Its settings are read once, at the
 * host's start (main.ts: `sandboxSettingsSchema`).
 */
import { spawnSync } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { delimiter, join } from "node:path";
import * as z from "zod";
import { ENV } from "../../common/consts.ts";
import { bubblewrap, type Isolation, limitsPrefix } from "./bubblewrap.ts";
import { parseCidr, ReplicaNetworks } from "./network.ts";
import { seccompProgram } from "./seccomp.ts";
import { DEFAULT_STDIO, type Sandbox } from "./types.ts";
import { DEFAULT_UID_BASE, ReplicaUsers, UID_COUNT } from "./users.ts";

export {
  SANDBOX_APP_DIR,
  SANDBOX_LIMITS,
  SANDBOX_RUN_DIR,
  type Sandbox,
  type Stdio,
  type WrapOptions,
  type Wrapped,
} from "./types.ts";

/** How the operator wants replicas sandboxed (ENV.sandbox, ENV.sandboxAllowNets, …). */
export interface SandboxSettings {
  /** false: apps run as plain processes (RUNLET_SANDBOX=off). */
  enabled: boolean;
  /** Private ranges apps may reach all the same (CIDR). */
  allowNets: string[];
  /** The first of the replicas' uids. */
  uidBase: number;
}

export const DEFAULT_SANDBOX_SETTINGS: SandboxSettings = {
  enabled: true,
  allowNets: [],
  uidBase: DEFAULT_UID_BASE,
};

/** The sandbox settings as the environment spells them: `off`, `10.1.0.0/16,…`, a number. */
export const sandboxSettingsSchema = {
  [ENV.sandbox]: z.enum(["on", "off"], { error: "must be on or off" }).default("on"),
  [ENV.sandboxAllowNets]: z
    .string()
    .default("")
    .transform((text, ctx) => {
      const ranges = text.split(",").filter((s) => s.trim());
      try {
        return ranges.map(parseCidr);
      } catch (err) {
        ctx.addIssue({ code: "custom", message: (err as Error).message });
        return z.NEVER;
      }
    }),
  [ENV.sandboxUidBase]: z.coerce
    .number()
    .int()
    .min(1000)
    .max(2 ** 31 - UID_COUNT, `must be a whole number from 1000 to ${2 ** 31 - UID_COUNT}`)
    .default(DEFAULT_UID_BASE),
};

export function sandboxSettingsOf(parsed: {
  [ENV.sandbox]: "on" | "off";
  [ENV.sandboxAllowNets]: string[];
  [ENV.sandboxUidBase]: number;
}): SandboxSettings {
  return {
    enabled: parsed[ENV.sandbox] === "on",
    allowNets: parsed[ENV.sandboxAllowNets],
    uidBase: parsed[ENV.sandboxUidBase],
  };
}

function onPath(name: string): string | undefined {
  for (const dir of [...(process.env.PATH ?? "").split(delimiter), "/usr/sbin", "/sbin"]) {
    const path = join(dir, name);
    try {
      accessSync(path, constants.X_OK);
      return path;
    } catch {
      // not here
    }
  }
  return undefined;
}

function unsandboxed(prlimit: string | undefined): Sandbox {
  const prefix = limitsPrefix(prlimit);
  return {
    kind: "none",
    isolatesNetwork: false,
    settle: async () => {},
    reclaim: () => {},
    async wrap(command, args, dir, options = {}) {
      const [first, ...rest] = [...prefix, command, ...args] as [string, ...string[]];
      return {
        command: first,
        args: rest,
        stdio: options.stdio ?? DEFAULT_STDIO,
        appDir: dir,
        adopt: async () => {},
        cleanup: () => {},
        ownProcesses: [],
      };
    },
  };
}

/** No sandbox and no limits: for tests of other parts. */
export const NO_SANDBOX: Sandbox = unsandboxed(undefined);

const warn = (text: string) => console.error(`runtime host: WARNING: ${text}`);

/**
 * Users and networks of their own for replicas, where the host runs as root and has the tools;
 * with a warning for each part it cannot give.
 */
function isolation(bwrap: string, settings: SandboxSettings): Isolation {
  const found: Isolation = { bwrap, prlimit: onPath("prlimit"), seccomp: seccompProgram() };
  if (!found.seccomp) {
    warn(
      `apps may create user namespaces (and mount in them): no seccomp filter is known for ${process.arch}`,
    );
  }
  const [setpriv, ip, nsenter] = [onPath("setpriv"), onPath("ip"), onPath("nsenter")];
  if (process.getuid?.() !== 0 || !setpriv || !ip || !nsenter) {
    warn(
      "replicas run as the host's own user and have no network at all: a user and a network of their own need the host to run as root, with setpriv, nsenter (util-linux) and ip (iproute2)",
    );
    return found;
  }
  found.users = { setpriv, pool: ReplicaUsers.from(settings.uidBase) };
  const slirp4netns = onPath("slirp4netns");
  if (!slirp4netns) warn("apps have no outbound network: apt-get install slirp4netns");
  found.networks = new ReplicaNetworks(
    { ip, nsenter, slirp4netns, unshare: onPath("unshare") },
    settings.allowNets,
  );
  return found;
}

/**
 * Picks the sandbox once at host start: bubblewrap if it is installed and works here (it needs
 * user namespaces), else plain processes with a warning saying what is missing.
 */
export function detectSandbox(settings: SandboxSettings = DEFAULT_SANDBOX_SETTINGS): Sandbox {
  const prlimit = onPath("prlimit");
  if (!settings.enabled) {
    warn("RUNLET_SANDBOX=off — apps run as plain processes, NOT sandboxed");
    return unsandboxed(prlimit);
  }
  const bwrap = onPath("bwrap");
  const why = !bwrap
    ? "bubblewrap (bwrap) is not installed: apt-get install bubblewrap"
    : spawnSync(bwrap, ["--unshare-user", "--unshare-pid", "--ro-bind", "/", "/", "true"], {
          timeout: 5_000,
        }).status !== 0
      ? "bubblewrap cannot create namespaces on this machine (user namespaces disabled?)"
      : undefined;
  if (bwrap && !why) return bubblewrap(isolation(bwrap, settings));
  warn(
    `apps run as plain processes, NOT sandboxed: ${why}. Every app can read what the host's user can, and reach what it can reach.`,
  );
  return unsandboxed(prlimit);
}
