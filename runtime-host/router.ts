/** The host's routes and the dispatch of a request to one of them. */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { HostMetrics, ReplicaOutput } from "../common/protocol/host.ts";
import type { HostContext } from "./context.ts";
import { hasBearerToken } from "./http/auth.ts";
import { HttpError } from "./http/errors.ts";
import { sendJson } from "./http/respond.ts";
import { deployApp, removeApp, setCurrentVersion, startTrial } from "./routes/deploy.ts";
import { forwardRequest } from "./routes/forward.ts";
import { invokeFunction } from "./routes/invoke.ts";
import { getRunLogs } from "./routes/run-logs.ts";
import { cancelRun, getRun, submitHttpRun, submitRun } from "./routes/runs.ts";
import { secretsChanged } from "./routes/secrets.ts";

type Handler = (
  req: IncomingMessage,
  res: ServerResponse,
  params: readonly string[],
  ctx: HostContext,
) => Promise<void>;

interface Route {
  method: string;
  path: RegExp;
  handler: Handler;
  /** Brings new work: refused (503) once the host stops, waited for while it stops. */
  work?: true;
}

const ROUTES: readonly Route[] = [
  {
    method: "GET",
    path: /^\/healthz$/,
    handler: async (_req, res, _params, { intake }) => {
      if (!intake.open) throw new HttpError(503, "the runtime host is stopping");
      sendJson(res, 200, { ok: true });
    },
  },
  {
    method: "GET",
    path: /^\/internal\/metrics$/,
    handler: async (_req, res, _params, { pool, spares, trials }) =>
      sendJson(res, 200, {
        apps: trials.withHeld(pool.stats()),
        spares: { managed: spares.managed.pids(), custom: spares.custom.pids() },
      } satisfies HostMetrics),
  },
  { method: "PUT", path: /^\/internal\/apps\/([^/]+)\/([^/]+)$/, handler: deployApp, work: true },
  {
    method: "POST",
    path: /^\/internal\/apps\/([^/]+)\/([^/]+)\/trial$/,
    handler: startTrial,
    work: true,
  },
  {
    method: "PUT",
    path: /^\/internal\/apps\/([^/]+)\/([^/]+)\/current$/,
    handler: setCurrentVersion,
  },
  {
    method: "DELETE",
    path: /^\/internal\/apps\/([^/]+)\/([^/]+)$/,
    handler: removeApp,
    work: true,
  },
  {
    method: "POST",
    path: /^\/internal\/invoke\/([^/]+)\/([^/]+)\/([^/]+)$/,
    handler: invokeFunction,
    work: true,
  },
  {
    method: "POST",
    path: /^\/internal\/async\/([^/]+)\/([^/]+)\/([^/]+)$/,
    handler: submitRun,
    work: true,
  },
  { method: "GET", path: /^\/internal\/runs\/([^/]+)$/, handler: getRun },
  { method: "DELETE", path: /^\/internal\/runs\/([^/]+)$/, handler: cancelRun },
  { method: "GET", path: /^\/internal\/runs\/([^/]+)\/logs$/, handler: getRunLogs },
  { method: "PUT", path: /^\/internal\/projects\/([^/]+)\/secrets$/, handler: secretsChanged },
  {
    method: "GET",
    path: /^\/internal\/apps\/([^/]+)\/([^/]+)\/output$/,
    handler: async (_req, res, [project = "", app = ""], { outputs }) =>
      sendJson(res, 200, { replicas: outputs.of(project, app) } satisfies ReplicaOutput),
  },
  // Any method: custom-runtime apps serve what they like.
  {
    method: "*",
    path: /^\/internal\/async-http\/([^/]+)\/([^/]+)(?:\/.*)?$/,
    handler: submitHttpRun,
    work: true,
  },
  {
    method: "*",
    path: /^\/internal\/http\/([^/]+)\/([^/]+)(?:\/.*)?$/,
    handler: forwardRequest,
    work: true,
  },
];

/** Answers one request; throws `HttpError` for the caller's mistakes. */
export async function route(
  req: IncomingMessage,
  res: ServerResponse,
  ctx: HostContext & { internalToken: string },
): Promise<void> {
  const pathname = new URL(req.url ?? "/", "http://host").pathname;
  if (
    pathname.startsWith("/internal/") &&
    !hasBearerToken(req.headers.authorization, ctx.internalToken)
  ) {
    throw new HttpError(401, "missing or wrong internal token");
  }
  for (const { method, path, handler, work } of ROUTES) {
    const match = req.method === method || method === "*" ? path.exec(pathname) : null;
    if (!match) continue;
    if (work) return ctx.intake.take(() => handler(req, res, match.slice(1), ctx));
    return handler(req, res, match.slice(1), ctx);
  }
  throw new HttpError(404, `no route for ${req.method} ${pathname}`);
}
