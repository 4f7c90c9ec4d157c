// A runtime host registered at an address the Worker cannot reach (a wrong --address, a
// firewall): `runlet start`'s host, and a second host whose advertised URL is a loopback port
// nothing listens on. It heartbeats, so the registry has it `up`. Until 2026-11-27 a sync call
// placed there failed 502 ("… the call may have run there") and nothing told the operator. Now
// the Worker asks a host's /healthz before its first call there: the call goes to the other
// host, and `GET /v2/hosts` / `runlet hosts` list the host unreachable, with when and the error.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../cli/processes.ts";
import { rendezvousOrder } from "../common/rendezvous.ts";
import { DEFAULT_UID_BASE, UID_COUNT } from "../runtime-host/sandbox/users.ts";
import { client, sleeper } from "./apps.ts";
import {
  BIN,
  cli,
  hostOfRun,
  json,
  newHome,
  type Runlet,
  removeHome,
  startRunlet,
} from "./harness.ts";
import { type HostProcess, spawnHost } from "./host-process.ts";

type Host = {
  id: string;
  name: string;
  address: string;
  state: string;
  unreachable?: { at: string; error: string };
};

describe("a host registered at an address the Worker cannot reach", () => {
  let runlet: Runlet;
  let home: string;
  let farHome: string;
  let far: HostProcess;
  let deadAddress: string;
  const hosts = async () =>
    (
      (await json(
        await fetch(`${runlet.local.baseUrl}/v2/hosts`, {
          headers: { authorization: `Bearer ${runlet.local.token}` },
        }),
      )) as { hosts: Host[] }
    ).hosts;

  beforeAll(async () => {
    home = await newHome();
    farHome = await newHome();
    runlet = await startRunlet(home);
    const made = await cli(["hosts", "token", "--name", "far"], runlet.env);
    expect(made.code).toBe(0);
    // It listens on a port of its own and says the Worker reaches it at another, where nothing
    // listens: as a host given the wrong --address.
    deadAddress = `http://127.0.0.1:${await freePort()}`;
    const port = await freePort();
    far = spawnHost(
      process.execPath,
      [
        ...[BIN, "host", "--control-plane", runlet.local.baseUrl],
        ...["--address", deadAddress, "--port", String(port), "--name", "far"],
      ],
      {
        RUNLET_HOME: farHome,
        RUNLET_HOST_TOKEN: made.stdout.trim(),
        RUNLET_SANDBOX_UID_BASE: String(DEFAULT_UID_BASE + UID_COUNT),
      },
    );
    for (let i = 0; i < 300; i++) {
      if ((await hosts()).some((h) => h.name === "far" && h.state === "up")) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`the far host did not join:\n${far.log}`);
  });

  afterAll(async () => {
    if (far) {
      const exited = new Promise((resolve) => far.child.once("exit", resolve));
      far.child.kill("SIGTERM");
      await Promise.race([exited, new Promise((r) => setTimeout(r, 20_000))]);
    }
    await runlet?.stop();
    await removeHome(home);
    await removeHome(farHome);
  });

  it("gets no call: a call placed there is served by the other host, and the host is listed unreachable", async () => {
    const app = client(runlet);
    // An app that prefers the far host (its own order of the hosts: rendezvous hashing over
    // their ids): with no replica warm, its calls go there first.
    const all = await hosts();
    const farHost = all.find((h) => h.name === "far") as Host;
    const local = all.find((h) => h.name !== "far") as Host;
    const { projectId } = runlet.local;
    let name = "hold";
    for (let i = 0; rendezvousOrder(`${projectId}/${name}`, all)[0]?.id !== farHost.id; i++)
      name = `hold-${i}`;
    await app.deploy(
      sleeper([`name = "${name}"`, "[scaling]", "max_replicas = 2", "replica_concurrency = 1"]),
    );
    // One call holds a replica: on the far host's way if no replica was warm, else on the
    // deploy's replica on runlet start's host, and then the next goes first to the far host,
    // which may start one (the Worker counts its own calls open on each host).
    const holding = app.submit(name, { ms: 4_000 });
    await new Promise((r) => setTimeout(r, 500));
    const answers = [];
    for (let i = 0; i < 3; i++) {
      const res = await app.submit(name, {});
      answers.push({ status: res.status, body: await json(res) });
    }
    const held = await holding;
    answers.push({ status: held.status, body: await json(held) });
    // Before, the first call placed on the far host was answered 502 "the runtime host could
    // not be reached, or the connection to it broke before it answered; the call may have run
    // there".
    expect(
      answers.map((a) => a.status),
      JSON.stringify(answers),
    ).toEqual([200, 200, 200, 200]);
    for (const { body } of answers)
      expect(await hostOfRun(runlet, body.run_id as string)).toBe(local.id);

    // The registry was told (the Worker's report goes on after the caller's answer).
    let listed: Host | undefined;
    for (let i = 0; i < 50 && !listed?.unreachable; i++) {
      listed = (await hosts()).find((h) => h.name === "far");
      if (!listed?.unreachable) await new Promise((r) => setTimeout(r, 100));
    }
    expect(listed).toMatchObject({
      state: "up",
      address: deadAddress,
      unreachable: { error: expect.stringContaining(`could not connect to ${deadAddress}`) },
    });
    expect(Date.now() - Date.parse(listed?.unreachable?.at as string)).toBeLessThan(60_000);
    const shown = await cli(["hosts"], runlet.env);
    expect(shown.stdout).toMatch(/far .* up, unreachable \d+ s ago: the Worker could not connect/);
  });
});
