// `runlet host` stopped while it still waits to join (its control plane not reachable yet: down,
// or a mistyped --control-plane): Ctrl-C in its terminal, or SIGTERM to the command from a service
// manager. The host had started its spare replicas already, each in a sandbox with a folder
// mounted under RUNLET_HOME and a network namespace of its own; the signal's default action ended
// the host there, and the 4 mounts and 4 namespaces stayed behind (the home could not even be
// removed: "Device or resource busy"). Now the start gives up and stops its spares first.
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { afterAll, expect, it } from "vitest";
import { freePort } from "../cli/processes.ts";
import { newHome, removeHome } from "../runtime-host/test-support.ts";
import { BIN, isAlive, pidOnPort } from "./harness.ts";
import { spawnHost } from "./host-process.ts";

/** The spares mount their folders and make their networks where the host runs as root. */
const sandboxed = process.getuid?.() === 0 && spawnSync("bwrap", ["--version"]).status === 0;

const homes: string[] = [];
const pids: number[] = [];
afterAll(async () => {
  for (const pid of pids) if (isAlive(pid)) process.kill(pid, "SIGKILL");
  await Promise.all(homes.map(removeHome));
});

/** The mount points under `dir`, from this process's mount table. */
function mountsUnder(dir: string): string[] {
  return readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .map((line) => line.split(" ")[4] ?? "")
    .filter((point) => point.startsWith(`${dir}/`));
}

/** `probe`'s first value that is not undefined, tried every 200 ms; throws after `ms`. */
async function until<T>(what: string, probe: () => T | undefined, ms: number): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** The network namespaces the runtime host `pid` made for its replicas. */
const namespacesOf = (pid: number) =>
  (existsSync("/run/netns") ? readdirSync("/run/netns") : []).filter((n) =>
    n.startsWith(`runlet-${pid}-`),
  );

it.skipIf(!sandboxed).each([
  ["Ctrl-C in its terminal (SIGINT to its process group)", "group"],
  ["SIGTERM to the command", "command"],
] as const)(
  "a runlet host stopped before it joined leaves nothing mounted, and no network: %s",
  async (_how, target) => {
    const home = await newHome();
    homes.push(home);
    const port = await freePort();
    const nothingThere = `http://127.0.0.1:${await freePort()}`;
    const host = spawnHost(
      process.execPath,
      [BIN, "host", "--control-plane", nothingThere, "--port", String(port), "--name", "early"],
      { RUNLET_HOME: home, RUNLET_HOST_TOKEN: "rlh_not_checked_as_nothing_answers" },
      true,
    );
    const command = host.child;
    pids.push(command.pid as number);
    const hostPid = await until(
      "its runtime host listening, its spares mounted",
      () => {
        const pid = pidOnPort(port);
        return pid && mountsUnder(home).length > 0 && namespacesOf(pid).length > 0
          ? pid
          : undefined;
      },
      60_000,
    );
    pids.push(hostPid);
    const exited = new Promise<number | null>((resolve) => command.once("exit", resolve));
    if (target === "group") process.kill(-(command.pid as number), "SIGINT");
    else command.kill("SIGTERM");
    expect(await exited, host.log).toBe(0);
    await until("its runtime host gone", () => !isAlive(hostPid) || undefined, 30_000);
    expect(host.log).toMatch(/runtime host: SIG(INT|TERM) before it had started; stopped/);
    expect(mountsUnder(home)).toEqual([]);
    expect(namespacesOf(hostPid)).toEqual([]);
  },
  120_000,
);
