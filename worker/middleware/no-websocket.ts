/** A WebSocket handshake (a GET with Upgrade) on any run path gets a clear refusal, not a 404. */
import { createMiddleware } from "hono/factory";
import type { WorkerEnv } from "../env.ts";
import { RunApiError } from "../errors.ts";

export const noWebSocket = createMiddleware<WorkerEnv>(async (c, next) => {
  if (c.req.header("upgrade")?.toLowerCase() !== "websocket") return next();
  throw new RunApiError(
    400,
    "WebSocket connections are not supported; call the run path with an HTTP POST",
  );
});
