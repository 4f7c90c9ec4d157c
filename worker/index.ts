/**
 * `{api_url}`: the edge that callers of deployed functions talk to. This file only wires: the
 * middleware that every run route needs (the WebSocket refusal, the caller and app, the run
 * id), then the routes, then the one error renderer.
 */
import { Hono } from "hono";
import { allowedMethods, notAllowedMessage } from "../common/allowed-methods.ts";
import { workerPath } from "../common/protocol/paths.ts";
import type { WorkerEnv } from "./env.ts";
import { renderError } from "./errors.ts";
import { caller } from "./middleware/caller.ts";
import { internalOnly } from "./middleware/internal-only.ts";
import { noWebSocket } from "./middleware/no-websocket.ts";
import { runId } from "./middleware/run-id.ts";
import { OPENAPI_PATH, serveOpenApi } from "./openapi.ts";
import { forwardToApp } from "./routes/app-request.ts";
import { callFunction, notAFunctionCall } from "./routes/function-call.ts";
import { HOST_REPORT_PATH, hostReport, wake } from "./routes/internal.ts";
import { cancelRun, DELIVERIES_PATH, RUN_PATH, redeliverRun, viewRun } from "./routes/run-state.ts";

export { RunShard } from "./runs/shard.ts";

export const app = new Hono<WorkerEnv>();

app.get("/healthz", (c) => c.json({ ok: true, component: "worker" }));

app.get(OPENAPI_PATH, serveOpenApi);
app.use("/v4/:project/:app/*", runId, noWebSocket, caller);
// A run's own URL is under its app's path: before the run calls.
app.get(RUN_PATH, viewRun);
app.delete(RUN_PATH, cancelRun);
app.post(DELIVERIES_PATH, redeliverRun);
// A managed app runs `POST /{function}`; a custom app takes any method and path.
app.post("/v4/:project/:app/:fn", (c) =>
  c.var.app.runtime === "custom" ? forwardToApp(c) : callFunction(c),
);
app.all("/v4/:project/:app/*", (c) =>
  c.var.app.runtime === "custom"
    ? forwardToApp(c)
    : notAFunctionCall(c, allowedMethods(app, c.req.path)),
);

app.post(HOST_REPORT_PATH, internalOnly, hostReport);
app.post(workerPath.wake, internalOnly, wake);

// A route's path under another method (`POST /v4/openapi.json`): 405 with `Allow`.
app.notFound((c) => {
  const { method, path } = c.req;
  const allowed = allowedMethods(app, path);
  if (allowed.length === 0)
    return c.json({ message: `no route for ${method} ${path}`, code: "not_found" }, 404);
  c.header("allow", allowed.join(", "));
  const message = notAllowedMessage(method, path, allowed);
  return c.json({ message, code: "method_not_allowed" }, 405);
});
app.onError(renderError);

export default app;
