/** The control plane's Node HTTP server: its Hono app on @hono/node-server. */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { getRequestListener, RequestError } from "@hono/node-server";
import { answerClientErrors } from "../common/client-errors.ts";
import { answerUnreadBodies } from "../common/unread-body.ts";
import type { ControlPlaneApp } from "./app.ts";

/**
 * Serves `app` as @hono/node-server's serve() does, with every refusal answered in JSON
 * `{message}` and none of them resetting its client:
 * - a body the app did not read (a 413, 401, 404) is read to its end or its connection closed
 *   gracefully, by common/unread-body.ts — in place of @hono/node-server's own clean-up, which
 *   closed keep-alive connections under their clients once a refused body had begun to be read;
 * - a request that is not HTTP Node can parse, by common/client-errors.ts;
 * - a request @hono/node-server cannot turn into a URL (a bad Host, a backslash in the path,
 *   the `*` target) or an HTTP/1.1 request without Host, here: both were an empty 400.
 */
export function serveControlPlane(
  app: ControlPlaneApp,
  opts: { port: number; hostname: string },
  onListening?: (info: AddressInfo) => void,
): Server {
  const hono = getRequestListener(app.fetch, {
    // The Host of an HTTP/1.0 request without one, as serve() does.
    hostname: opts.hostname,
    autoCleanupIncoming: false,
    errorHandler: (err) => {
      if (err instanceof RequestError) {
        const body = refusal(`the request could not be read: ${err.message}`);
        return new Response(body, { status: 400, headers: { "content-type": JSON_TYPE } });
      }
      // Past the app's own onError (errors.ts), which logs what it answers 500: so does this.
      console.error("[control-plane] unexpected error outside the app:", err);
      const body = JSON.stringify({ message: "internal error", code: "internal" });
      return new Response(body, { status: 500, headers: { "content-type": JSON_TYPE } });
    },
  });
  const server = createServer({ requireHostHeader: false }, (req, res) => {
    if (req.httpVersion !== "1.1" || req.headers.host !== undefined) return hono(req, res);
    const body = refusal("the request could not be read: HTTP/1.1 requires a Host header");
    res.writeHead(400, { "content-type": JSON_TYPE, "content-length": Buffer.byteLength(body) });
    res.end(body);
  });
  answerUnreadBodies(server);
  answerClientErrors(server);
  server.listen(opts.port, opts.hostname, () => onListening?.(server.address() as AddressInfo));
  return server;
}

const JSON_TYPE = "application/json; charset=utf-8";

/** A 400 in the app's error shape (errors.ts), for a request that never reaches the app. */
const refusal = (message: string) => JSON.stringify({ message, code: "bad_request" });
