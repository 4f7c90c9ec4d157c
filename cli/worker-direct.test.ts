import { createServer, get, type Server } from "node:http";
import { type AddressInfo, connect } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { directPort } from "./worker-direct.ts";

/** An HTTP server on a free port that answers every request with `name`: a Worker's workerd. */
async function workerd(name: string): Promise<Server> {
  const server = createServer((_req, res) => res.end(name));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return server;
}
const portOf = (server: Server) => (server.address() as AddressInfo).port;
const reloaded = (server: Server) => ({
  proxyData: { userWorkerUrl: { hostname: "127.0.0.1", port: String(portOf(server)) } },
});

/** The body of a GET of `port`, on a connection of its own. */
function answer(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    get({ host: "127.0.0.1", port, path: "/healthz", agent: false }, (res) => {
      let body = "";
      res.on("data", (chunk) => {
        body += chunk;
      });
      res.on("end", () => resolve(body));
    }).on("error", reject);
  });
}

describe("the run API's port passed to the Worker's workerd", () => {
  const ends: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const end of ends.splice(0)) await end();
  });

  it("holds connections until wrangler names the Worker's workerd, and follows it to a new one on a reload", async () => {
    const first = await workerd("first");
    const second = await workerd("second");
    ends.push(
      () => new Promise((resolve) => first.close(resolve)),
      () => new Promise((resolve) => second.close(resolve)),
    );
    const port = directPort("127.0.0.1", 0);
    ends.push(() => port.teardown());
    const { url } = await port.ready.promise;
    const listening = Number(url.port);

    // Before the Worker has started, a request waits for it instead of being refused.
    const early = answer(listening);
    port.onReloadComplete(reloaded(first));
    expect(await early).toBe("first");

    // While wrangler reloads the Worker, new requests wait for the new workerd.
    port.onReloadStart();
    const during = answer(listening);
    port.onReloadComplete(reloaded(second));
    expect(await during).toBe("second");
    expect(await answer(listening)).toBe("second");
  });

  it("answers a client that ends its side once its request is sent", async () => {
    const worker = await workerd("answered");
    ends.push(() => new Promise((resolve) => worker.close(resolve)));
    const port = directPort("127.0.0.1", 0);
    ends.push(() => port.teardown());
    const { url } = await port.ready.promise;
    port.onReloadComplete(reloaded(worker));
    const got = await new Promise<string>((resolve, reject) => {
      let text = "";
      const socket = connect(Number(url.port), "127.0.0.1", () => {
        socket.end("GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n");
      });
      socket.on("data", (chunk) => {
        text += chunk;
      });
      socket.on("end", () => resolve(text));
      socket.on("error", reject);
    });
    expect(got).toMatch(/^HTTP\/1\.1 200 OK/);
    expect(got.endsWith("answered")).toBe(true);
  });
});
