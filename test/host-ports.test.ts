// RUNLET_HOSTS=2 puts the second host at RUNLET_HOST_PORT+1, so an operator knows its port in
// advance, and a restarted `runlet start` registers it at the same address under the same id:
// `runlet hosts` lists two hosts after a restart, not a third one `down` (found running a
// RUNLET_HOSTS=2 stack by hand, round 13: its second host took a port the OS picked each time).
import { afterAll, expect, it } from "vitest";
import { freePort, portIsFree } from "../cli/processes.ts";
import { cli, freePorts, newHome, type Runlet, removeHome, startRunlet } from "./harness.ts";

let runlet: Runlet | undefined;
let home: string;

afterAll(async () => {
  await runlet?.stop();
  if (home) await removeHome(home);
});

/** Free ports for a stack whose host port is followed by a free one (bounded tries). */
async function portsWithNextFree(): Promise<Runlet["ports"]> {
  for (let i = 0; i < 50; i++) {
    const ports = { ...(await freePorts()), host: await freePort() };
    const next = ports.host + 1;
    if (next !== ports.control && next !== ports.api && (await portIsFree(next, "127.0.0.1")))
      return ports;
  }
  throw new Error("no host port with a free port after it");
}

type Host = { id: string; name: string; address: string; state: string };

it("puts host 2 at RUNLET_HOST_PORT+1, and a restart keeps the two hosts and their ids", async () => {
  home = await newHome();
  const ports = await portsWithNextFree();
  const env = { RUNLET_HOSTS: "2" };
  runlet = await startRunlet(home, ports, env);
  const ready = JSON.parse(
    runlet
      .output()
      .split("\n")
      .find((line) => line.includes('"ready":true')) as string,
  );
  expect(ready.hostUrls).toEqual([
    `http://127.0.0.1:${ports.host}`,
    `http://127.0.0.1:${ports.host + 1}`,
  ]);
  const listed = async () => {
    const out = await cli(["hosts", "--json"], runlet?.env ?? {});
    expect(out.code, out.stderr).toBe(0);
    return (JSON.parse(out.stdout) as { hosts: Host[] }).hosts;
  };
  const before = (await listed()).map((h) => `${h.name} ${h.id} ${h.address}`).sort();
  expect(before).toHaveLength(2);

  expect(await runlet.stop()).toBe(0);
  runlet = await startRunlet(home, ports, env);
  const after = await listed();
  expect(after.map((h) => `${h.name} ${h.id} ${h.address}`).sort()).toEqual(before);
});
