// The control plane's client of the runtime hosts, against real loopback servers: a run's logs
// come from the host that has them while another host, on a stalled link, holds its request
// (asked one after another, the stalled host cost 10 s before the next was asked); an app's
// replicas are asked of every host at once.
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { httpRuntimeHosts } from "./host-client.ts";

const servers: Server[] = [];
/** The stalled host's request, open until the client gives up on it. */
let held: IncomingMessage | undefined;
let heldClosed = false;

async function serve(handler: Parameters<typeof createServer>[1]): Promise<string> {
  const server = createServer(handler);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

let stalled: string;
let holder: string;

beforeAll(async () => {
  stalled = await serve((req) => {
    held = req;
    req.socket.once("close", () => {
      heldClosed = true;
    });
  });
  holder = await serve((req, res) => {
    const runId = /\/internal\/runs\/([^/]+)\/logs/.exec(req.url ?? "")?.[1];
    res.setHeader("content-type", "application/json");
    res.end(JSON.stringify({ runId, lines: [], truncated: false }));
  });
});

afterAll(async () => {
  for (const server of servers) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

it("a run's logs come from the host that has them, not after a stalled host's timeout", async () => {
  const hosts = httpRuntimeHosts(
    async () => [
      { id: "hst_far", address: stalled, state: "up" },
      { id: "hst_near", address: holder, state: "up" },
    ],
    "t",
  );
  const logs = await hosts.runLogs({ project: "prj_1", runId: "run_1" });
  expect(logs).toEqual({ runId: "run_1", lines: [], truncated: false });
  // The stalled host was asked too, and still holds the request: nobody waited for it.
  expect(held).toBeDefined();
  expect(heldClosed).toBe(false);
});

it("asks every host for an app's replicas at once, not each after the last one's timeout", async () => {
  // Two hosts on stalled links: each holds its request until the client gives up (2 s).
  const open: IncomingMessage[] = [];
  let bothOpen = false;
  const stall = () =>
    serve((req) => {
      open.push(req);
      if (open.length === 2) bothOpen = open.every((r) => !r.socket.destroyed);
    });
  const [a, b] = [await stall(), await stall()];
  const hosts = httpRuntimeHosts(
    async () => [
      { id: "hst_a", address: a, state: "up" },
      { id: "hst_b", address: b, state: "up" },
    ],
    "t",
  );
  expect(await hosts.replicas({ project: "prj_1", app: "x" })).toBeUndefined();
  // The second was asked while the first still held its request.
  expect(open).toHaveLength(2);
  expect(bothOpen).toBe(true);
});

it("counts an app's replicas over the hosts that answer, and says each host's part", async () => {
  // One host runs two replicas of x (one busy with 3 calls) and has one more granted; another
  // runs none of x; a third does not answer.
  const metrics = (apps: unknown[]) =>
    serve((_req, res) => {
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ apps, spares: { managed: [], custom: [] } }));
    });
  const busy = await metrics([
    {
      project: "prj_1",
      app: "x",
      version: 1,
      queued: 4,
      reserved: 1,
      replicas: [
        { pid: 10, ready: true, active: 3 },
        { pid: 11, ready: true, active: 0 },
      ],
    },
  ]);
  const other = await metrics([
    {
      project: "prj_1",
      app: "y",
      version: 1,
      queued: 0,
      replicas: [{ pid: 12, ready: false, active: 0 }],
    },
  ]);
  const hosts = httpRuntimeHosts(
    async () => [
      { id: "hst_busy", address: busy, state: "up" },
      { id: "hst_other", address: other, state: "up" },
      { id: "hst_gone", address: "http://127.0.0.1:1", state: "up" },
    ],
    "t",
  );
  const now = await hosts.replicas({ project: "prj_1", app: "x" });
  expect(now).toMatchObject({ starting: 0, idle: 1, busy: 1, queued: 4 });
  expect(Object.fromEntries(now?.byHost ?? [])).toEqual({
    hst_busy: { replicas: 3, busy: 3 },
    hst_other: { replicas: 0, busy: 0 },
  });
});

it("tells every host a change of a project's secrets, and does not wait on a stalled one past 2 s", async () => {
  const told: Array<{ method?: string; url?: string; body: string }> = [];
  const host = await serve((req, res) => {
    let body = "";
    req.on("data", (d) => {
      body += d;
    });
    req.on("end", () => {
      told.push({ method: req.method, url: req.url, body });
      res.writeHead(204).end();
    });
  });
  const hosts = httpRuntimeHosts(
    async () => [
      { id: "hst_far", address: stalled, state: "up" },
      { id: "hst_near", address: host, state: "up" },
    ],
    "t",
  );
  await hosts.secretsChanged({ project: "prj_1", revision: 3 });
  expect(told).toEqual([
    { method: "PUT", url: "/internal/projects/prj_1/secrets", body: '{"revision":3}' },
  ]);
});
