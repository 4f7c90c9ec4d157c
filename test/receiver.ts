/** A real webhook receiver on loopback for the end-to-end tests: scripted answers per path. */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** An answer: a status, "drop" (the connection is cut: a network error), "hang" (no answer). */
export type Behaviour = number | "drop" | "hang";

export interface Delivery {
  at: number;
  headers: IncomingMessage["headers"];
  body: string;
}

export interface Receiver {
  url: string;
  /** Answers the next requests to `path` with `behaviours` in turn, then 200. */
  script(path: string, behaviours: Behaviour[]): void;
  received(path: string): Delivery[];
  /** Resolves once `path` has received `count` requests (bounded). */
  waitFor(path: string, count: number, timeoutMs?: number): Promise<Delivery[]>;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const scripts = new Map<string, Behaviour[]>();
  const log = new Map<string, Delivery[]>();
  const hanging = new Set<ServerResponse>();
  const server = createServer((req, res) => {
    const path = req.url ?? "/";
    let body = "";
    req.on("data", (chunk) => {
      body += chunk;
    });
    req.on("end", () => {
      const seen = log.get(path) ?? [];
      seen.push({ at: Date.now(), headers: req.headers, body });
      log.set(path, seen);
      const behaviour = scripts.get(path)?.shift() ?? 200;
      if (behaviour === "drop") {
        req.socket.destroy();
        return;
      }
      if (behaviour === "hang") {
        hanging.add(res);
        return;
      }
      const headers = behaviour >= 300 && behaviour < 400 ? { location: "/followed" } : {};
      res.writeHead(behaviour, headers).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    script: (path, behaviours) => scripts.set(path, [...behaviours]),
    received: (path) => log.get(path) ?? [],
    async waitFor(path, count, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      while ((log.get(path)?.length ?? 0) < count) {
        if (Date.now() > deadline)
          throw new Error(`${path} received ${log.get(path)?.length ?? 0} of ${count} requests`);
        await new Promise((r) => setTimeout(r, 20));
      }
      return log.get(path) ?? [];
    },
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
