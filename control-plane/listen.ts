/** The control plane's Node HTTP server: its Hono app on @hono/node-server. */
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { answerUnreadBodies } from "../common/unread-body.ts";
import type { ControlPlaneApp } from "./app.ts";

/**
 * Serves `app` as serve() does. A body the app did not read (a refusal: 413, 401, 404) is read
 * to its end or its connection closed gracefully, by common/unread-body.ts — in place of
 * @hono/node-server's own clean-up, which closed keep-alive connections under their clients
 * once a refused body had begun to be read.
 */
export function serveControlPlane(
  app: ControlPlaneApp,
  opts: { port: number; hostname: string },
  onListening?: (info: AddressInfo) => void,
): Server {
  const server = serve(
    { fetch: app.fetch, port: opts.port, hostname: opts.hostname, autoCleanupIncoming: false },
    onListening,
  );
  // Without a `createServer` option, serve() makes a node:http server.
  answerUnreadBodies(server as Server);
  return server as Server;
}
