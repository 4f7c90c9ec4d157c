import { once } from "node:events";
import { createServer as createHttpServer } from "node:http";
import { type AddressInfo, connect, createServer, type Server, type Socket } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, describe, expect, it } from "vitest";
import { directPort } from "./worker-direct.ts";

const portOf = (server: Server) => (server.address() as AddressInfo).port;
const reloaded = (server: Server) => ({
  proxyData: { userWorkerUrl: { hostname: "127.0.0.1", port: String(portOf(server)) } },
});
const request = (path: string) => `GET ${path} HTTP/1.1\r\nhost: x\r\n\r\n`;
const answer = (body: string) => `HTTP/1.1 200 OK\r\ncontent-length: ${body.length}\r\n\r\n${body}`;

/** A client's own connection: what it has read so far, and whether the port closed it. */
async function client(port: number) {
  const socket = connect(port, "127.0.0.1");
  await once(socket, "connect");
  const seen = { text: "", closed: false };
  socket.on("data", (chunk) => {
    seen.text += chunk;
  });
  socket.on("end", () => {
    seen.closed = true;
  });
  socket.on("close", () => {
    seen.closed = true;
  });
  socket.on("error", () => {});
  /** Resolves once `text` has been read, or the port closed the connection first. */
  const read = async (text: string) => {
    for (let i = 0; i < 600 && !seen.text.includes(text) && !seen.closed; i++) await sleep(25);
    return seen.text.includes(text);
  };
  return { socket, seen, read };
}

/**
 * A stand-in for workerd that notes what each of its connections received so far (`received`,
 * by connection) and lets `onData` answer or close, given the connection's index and text.
 */
function recordingWorker(onData: (socket: Socket, index: number, text: string) => void) {
  const received: string[] = [];
  const worker = createServer((socket: Socket) => {
    const index = received.push("") - 1;
    let text = "";
    socket.on("data", (chunk) => {
      text += chunk;
      received[index] = text;
      onData(socket, index, text);
    });
    socket.on("error", () => {});
  });
  return { worker, received };
}

describe("a client's connection over workerd's idle closes", () => {
  const ends: (() => unknown)[] = [];
  afterEach(async () => {
    for (const end of ends.splice(0).reverse()) await end();
  });

  async function portTo(worker: Server, crossMs = 30_000) {
    await new Promise<void>((resolve) => worker.listen(0, "127.0.0.1", resolve));
    ends.push(() => new Promise((resolve) => worker.close(resolve)));
    const port = directPort("127.0.0.1", 0, { closedIdleMs: 200, crossMs, clientIdleMs: 60_000 });
    ends.push(() => port.teardown());
    const { url } = await port.ready.promise;
    port.onReloadComplete(reloaded(worker));
    return Number(url.port);
  }

  it("stays open when workerd closes its idle connection, and the next request opens a new one", async () => {
    let served = 0;
    const closes: Promise<unknown>[] = [];
    // workerd's idle close, as Node's server does it: 300 ms after the last answer.
    const worker = createHttpServer((_req, res) => res.end(`answer ${++served}`));
    worker.keepAliveTimeout = 300;
    worker.on("connection", (socket) => closes.push(once(socket, "close")));
    const port = await portTo(worker);
    const { socket, seen, read } = await client(port);
    ends.push(() => socket.destroy());

    socket.write(request("/one"));
    expect(await read("answer 1")).toBe(true);
    await closes[0]; // workerd closed it for being idle
    socket.write(request("/two"));
    expect(await read("answer 2")).toBe(true);
    expect(seen.closed).toBe(false);
    expect(closes).toHaveLength(2);
  });

  it("writes a request that crossed workerd's idle close again on a new connection", async () => {
    // The first connection answers one request, then closes without reading the next: the
    // moment workerd's idle close and the client's next request cross.
    const { worker, received } = recordingWorker((socket, index, text) => {
      if (index === 0 && text !== request("/one")) return void socket.destroy();
      socket.write(answer(`answer on connection ${index + 1}`));
    });
    const port = await portTo(worker);
    const { socket, seen, read } = await client(port);
    ends.push(() => socket.destroy());

    socket.write(request("/one"));
    expect(await read("answer on connection 1")).toBe(true);
    await sleep(300); // longer than the idle rule's 200 ms
    socket.write(request("/two"));
    expect(await read("answer on connection 2")).toBe(true);
    expect(received).toEqual([request("/one") + request("/two"), request("/two")]);
    expect(seen.closed).toBe(false);
  });

  it("passes on a close that did not follow a silence, and sends nothing twice", async () => {
    // workerd closing a connection while a request is under way (the Worker failed).
    const { worker, received } = recordingWorker((socket) => socket.destroy());
    const port = await portTo(worker);
    const { socket, seen, read } = await client(port);
    ends.push(() => socket.destroy());

    socket.write(request("/one"));
    expect(await read("never")).toBe(false);
    expect(seen.closed).toBe(true);
    expect(received).toEqual([request("/one")]);
  });

  it("passes on a close that came long after the request, and sends nothing twice", async () => {
    const { worker, received } = recordingWorker((socket, index, text) => {
      if (index === 0 && text === request("/one")) socket.write(answer("answer 1"));
      else setTimeout(() => socket.destroy(), 400); // after the cross rule's 100 ms
    });
    const port = await portTo(worker, 100);
    const { socket, seen, read } = await client(port);
    ends.push(() => socket.destroy());

    socket.write(request("/one"));
    expect(await read("answer 1")).toBe(true);
    await sleep(300);
    socket.write(request("/two"));
    expect(await read("never")).toBe(false);
    expect(seen.closed).toBe(true);
    expect(received).toEqual([request("/one") + request("/two")]);
  });

  it.each([
    ["with a Content-Length", "HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\npart one\n"],
    ["chunked", "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n9\r\npart one\n\r\n"],
  ])("passes on a close that cuts an answer %s short after a silence", async (_, part) => {
    let cuts = 0;
    // An app's answer that pauses longer than the idle rule's 200 ms, then breaks off.
    const worker = createServer((socket: Socket) => {
      socket.once("data", () => {
        socket.write(part);
        setTimeout(() => {
          cuts++;
          socket.end();
        }, 400);
      });
      socket.on("error", () => {});
    });
    const port = await portTo(worker);
    const { socket, seen, read } = await client(port);
    ends.push(() => socket.destroy());

    socket.write(request("/one"));
    expect(await read("never")).toBe(false);
    expect(cuts).toBe(1);
    expect(seen.text).toBe(part);
    expect(seen.closed).toBe(true);
  });

  it("passes on a close that leaves a pipelined request unanswered after a silence", async () => {
    // The first of two requests written at once is answered; then, long after, a close.
    const worker = createServer((socket: Socket) => {
      socket.once("data", () => {
        socket.write(answer("answer 1"));
        setTimeout(() => socket.end(), 400); // after the idle rule's 200 ms
      });
      socket.on("error", () => {});
    });
    const port = await portTo(worker);
    const { socket, seen, read } = await client(port);
    ends.push(() => socket.destroy());

    socket.write(request("/one") + request("/two"));
    expect(await read("never")).toBe(false);
    expect(seen.text).toBe(answer("answer 1"));
    expect(seen.closed).toBe(true);
  });

  it("does not write again a request that followed one still unanswered", async () => {
    // workerd holds the first request unanswered, and its connection closes just as the second
    // one, written after a silence, comes: writing that one again on a new connection would
    // answer it in the first one's place.
    const { worker, received } = recordingWorker((socket, index, text) => {
      if (index > 0) socket.write(answer(`answer on connection ${index + 1}`));
      else if (text.includes("/two")) socket.destroy();
    });
    const port = await portTo(worker);
    const { socket, seen, read } = await client(port);
    ends.push(() => socket.destroy());

    socket.write(request("/one"));
    await sleep(300); // longer than the idle rule's 200 ms
    socket.write(request("/two"));
    expect(await read("answer")).toBe(false);
    expect(seen.closed).toBe(true);
    expect(received).toEqual([request("/one") + request("/two")]);
  });
});
