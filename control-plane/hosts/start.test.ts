// Which host a deploy's trial goes to, and what the control plane makes of each answer: the
// first host up in the app's rendezvous order, the next when one cannot be reached, cannot
// start a version before it is deployed (an older host), could not start it for a reason of its
// own (its sandbox, the secrets, its disk) or stops mid-answer, and every reason when none could.
// Each host here is a local server answering as such a host would.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { appConfigSchema } from "../../common/app-config.ts";
import { rendezvousOrder } from "../../common/rendezvous.ts";
import type { LiveHost } from "./registry.ts";
import { answerMs, startOnHost } from "./start.ts";

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(
    servers.splice(0).map((s) => new Promise<void>((resolve) => s.close(() => resolve()))),
  );
});

/** A host answering every request with `status` and `body`; what it was asked, in `asked`. */
async function host(status: number, body: unknown, asked: string[] = []): Promise<string> {
  const server = createServer((req, res) => {
    asked.push(`${req.method} ${req.url}`);
    req.resume();
    req.on("end", () =>
      res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body)),
    );
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** An address where nothing listens. */
async function gone(): Promise<string> {
  const address = await host(200, {});
  const server = servers.pop() as Server;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return address;
}

const input = {
  project: "p",
  app: "a",
  digest: "d",
  bundle: {
    version: 2,
    config: appConfigSchema.parse({ name: "a" }),
    files: [{ path: "main.mjs", contentBase64: "MQ==" }],
  },
};

/** Hosts h1…hN in the app's rendezvous order, each given its address by `addresses`. */
function inOrder(addresses: string[], states: LiveHost["state"][] = []): LiveHost[] {
  const ids = rendezvousOrder(
    "p/a",
    addresses.map((_, i) => ({ id: `hst_${i}` })),
  ).map((h) => h.id);
  return addresses.map((address, i) => ({
    id: ids[i] as string,
    address,
    state: states[i] ?? "up",
  }));
}

describe("a deploy's trial", () => {
  it("goes to the first host up in the app's order, past one that is draining or gone", async () => {
    const asked: string[] = [];
    const started = await host(200, { started: true, ms: 12, exports: ["handler"] }, asked);
    const never: string[] = [];
    const later = await host(200, { started: true, ms: 1 }, never);
    const draining = await host(200, { started: true, ms: 1 }, never);
    const hosts = inOrder([draining, await gone(), started, later], ["draining"]);
    expect(await startOnHost(hosts, "token", input)).toEqual({
      state: "started",
      host: hosts[2]?.id,
      ms: 12,
      // The module's functions, for the deploy's hint of how to call one.
      exports: ["handler"],
    });
    expect(asked).toEqual(["POST /internal/apps/p/a/trial"]);
    expect(never).toEqual([]);
  });

  it("is the app's failure when a host says it did not start, with what it wrote", async () => {
    const output = [{ stream: "stderr", text: "ModuleNotFoundError: No module named 'x'" }];
    const message = "the app failed to start: its process exited before it was healthy (code 1)";
    const hosts = inOrder([await host(200, { started: false, message, output })]);
    expect(await startOnHost(hosts, "token", input)).toEqual({
      state: "failed",
      host: hosts[0]?.id,
      message,
      output,
    });
  });

  it("passes over a host that could not start it for a reason of its own, for the next", async () => {
    const message =
      "the runtime host could not start a replica of the app: cannot read the project's secrets: the control plane answered 500 for the project's secrets";
    const faulty = await host(200, { started: false, message, output: [], fault: "host" });
    const hosts = inOrder([faulty, await host(200, { started: true, ms: 7 })]);
    expect(await startOnHost(hosts, "token", input)).toEqual({
      state: "started",
      host: hosts[1]?.id,
      ms: 7,
    });
    // None that can: no host could start it, and the app is not blamed.
    expect(await startOnHost(hosts.slice(0, 1), "token", input)).toEqual({
      state: "unavailable",
      reasons: [`${hosts[0]?.id}: ${message}`],
    });
  });

  it("says a host went away mid-answer when it closes the connection after its 200's head", async () => {
    const server = createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        res.writeHead(200, { "content-type": "application/json" });
        res.flushHeaders();
        setImmediate(() => res.destroy());
      });
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const stopping = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const hosts = inOrder([stopping, await host(200, { started: true, ms: 3 })]);
    expect(await startOnHost(hosts.slice(0, 1), "token", input)).toEqual({
      state: "unavailable",
      reasons: [
        `${hosts[0]?.id} went away mid-answer (its connection closed after its 200's head, before it said whether the replica started: did it stop?)`,
      ],
    });
    expect(await startOnHost(hosts, "token", input)).toMatchObject({ host: hosts[1]?.id });
  });

  it("says of each host why it could not be asked, when none could", async () => {
    const older = await host(404, { message: "no route for POST /internal/apps/p/a/trial" });
    const stopping = await host(503, { message: "the runtime host is stopping" });
    const hosts = inOrder([await gone(), older, stopping, await host(200, { ok: true })]);
    expect(await startOnHost(hosts, "token", input)).toEqual({
      state: "unavailable",
      reasons: [
        `${hosts[0]?.id} could not be reached`,
        `${hosts[1]?.id} cannot start a version before it is deployed (a runtime host older than the control plane?)`,
        `${hosts[2]?.id} answered 503: the runtime host is stopping`,
        `${hosts[3]?.id} answered 200 without a trial's answer`,
      ],
    });
    expect(await startOnHost([], "token", input)).toEqual({ state: "unavailable", reasons: [] });
  });
});

describe("the wait for a trial's answer", () => {
  it("grows with the app's start_timeout: the host's start limit and a minute for the rest", () => {
    expect(answerMs({})).toBe(90_000); // the default 30 s start, as before the field
    expect(answerMs({ start_timeout: 120 })).toBe(180_000);
    expect(answerMs({ start_timeout: 1800 })).toBe(1_860_000);
  });
});
