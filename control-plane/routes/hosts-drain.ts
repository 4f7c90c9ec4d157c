/**
 * An operator drains a host and resumes it (docs/hosts.md, "Draining a host"):
 * `POST /v2/hosts/{hostId}/drain`, `POST /v2/hosts/{hostId}/resume`. Not in a project's audit
 * log: no project owns a host.
 */
import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { operatorOnly } from "../auth/access.ts";
import type { AppEnv } from "../context.ts";
import { ApiError } from "../errors.ts";
import { type DrainAnswer, drainHost, resumeHost } from "../hosts/drain.ts";
import { bearerAuth, errorResponses } from "../openapi.ts";
import { hostIdParams, noSuchHost, operatorErrors } from "./hosts.ts";

const { 409: refused } = errorResponses({
  409: "The host is in no state to be drained or resumed (its state is named).",
});

const hostRoute = (verb: "drain" | "resume", summary: string, description: string) =>
  createRoute({
    method: "post",
    path: `/v2/hosts/{hostId}/${verb}`,
    operationId: `${verb}Host`,
    summary,
    description,
    security: bearerAuth,
    middleware: [operatorOnly] as const,
    request: { params: hostIdParams },
    responses: {
      204: { description: "Done (also when it was so already)." },
      ...operatorErrors(),
      404: noSuchHost,
      409: refused as NonNullable<typeof refused>,
    },
  });

const drainRoute = hostRoute(
  "drain",
  "Drains a host: no new work; its replicas retire as their calls end (operators).",
  "The Worker sends it no new call or run, no deploy starts its trial there, and it keeps no " +
    "replica: idle ones stop at once, busy ones once their calls end, and their places of " +
    "max_replicas go to the other hosts. It stays drained until resumed, a crash and a restart " +
    "included, or until it stops gracefully (it is up when it starts again). A stopped host is " +
    "refused (409).",
);
const resumeRoute = hostRoute(
  "resume",
  "Ends a host's drain: it takes work again (operators).",
  "A host that is up is left as it is; one that is down, stopping or stopped is refused (409).",
);

export function registerHostsDrain(app: OpenAPIHono<AppEnv>) {
  app.openapi(drainRoute, async (c) => {
    const { hostId } = c.req.valid("param");
    done(hostId, "drained", await drainHost(c.var.deps.db, hostId));
    return c.body(null, 204);
  });
  app.openapi(resumeRoute, async (c) => {
    const { hostId } = c.req.valid("param");
    done(hostId, "resumed", await resumeHost(c.var.deps.db, hostId));
    return c.body(null, 204);
  });
}

/** Throws the 404 or 409 of a drain or a resume that was not done. */
function done(id: string, what: "drained" | "resumed", answer: DrainAnswer): void {
  if (!answer) throw new ApiError("not_found", `no host '${id}' in the registry`);
  if (answer.done) return;
  const why =
    what === "drained"
      ? "it runs nothing, and takes work when it starts again"
      : answer.state === "draining"
        ? "it is stopping, and takes work when it starts again"
        : "only a drained host is resumed";
  throw new ApiError("conflict", `host '${id}' is ${answer.state}: ${why}`);
}
