/**
 * The runtime hosts' side of the registry (docs/hosts.md), with a host token:
 * `POST /internal/hosts` registers one, `POST /internal/hosts/{hostId}/heartbeat` keeps it
 * alive, `POST /internal/hosts/{hostId}/replicas` asks for one more replica of an app. And the
 * Worker's, with the internal token: `GET /internal/hosts`, where it places work.
 */
import type { OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import {
  HEARTBEAT_MS,
  type HeartbeatAnswer,
  heartbeatSchema,
  type Placement,
  type Registered,
  registrationSchema,
  replicaRequestSchema,
} from "../../common/protocol/hosts.ts";
import { internalOnly } from "../auth/internal-only.ts";
import type { AppEnv } from "../context.ts";
import { ApiError } from "../errors.ts";
import {
  grantReplica,
  hostOf,
  hostTokenId,
  listHosts,
  recordHeartbeat,
  registerHost,
} from "../hosts/registry.ts";
import { jsonBody } from "../validate.ts";

type HostEnv = AppEnv & { Variables: { hostTokenId: string } };

/** A valid, unrevoked host token (401 otherwise); its id in `c.var.hostTokenId`. */
const hostToken = createMiddleware<HostEnv>(async (c, next) => {
  const given = /^Bearer[ ]+(\S+)\s*$/i.exec(c.req.header("authorization") ?? "")?.[1] ?? "";
  const id = await hostTokenId(c.var.deps.db, given);
  if (!id) throw new ApiError("unauthorized", "a runtime host needs a valid host token");
  c.set("hostTokenId", id);
  await next();
});

/** The path's host, registered with the token presented (404: register again). */
async function pathHost(c: Context<HostEnv>): Promise<string> {
  const id = c.req.param("hostId") ?? "";
  const host = await hostOf(c.var.deps.db, id, c.var.hostTokenId);
  if (!host) throw new ApiError("not_found", `no host '${id}' registered with this token`);
  return host.id;
}

export function registerInternalHosts(app: OpenAPIHono<AppEnv>) {
  const hosts = app as unknown as OpenAPIHono<HostEnv>;
  hosts.post("/internal/hosts", hostToken, async (c) => {
    const reg = await jsonBody(c, registrationSchema);
    const { db, internalToken } = c.var.deps;
    if (!internalToken) throw new ApiError("unavailable", "no internal token is set");
    const hostId = await registerHost(db, c.var.hostTokenId, reg);
    return c.json({ hostId, internalToken, heartbeatMs: HEARTBEAT_MS } satisfies Registered, 200);
  });

  hosts.post("/internal/hosts/:hostId/heartbeat", hostToken, async (c) => {
    const id = await pathHost(c);
    const beat = await jsonBody(c, heartbeatSchema);
    const gone = await recordHeartbeat(c.var.deps.db, id, beat);
    return c.json({ gone } satisfies HeartbeatAnswer, 200);
  });

  hosts.post("/internal/hosts/:hostId/replicas", hostToken, async (c) => {
    const id = await pathHost(c);
    const req = await jsonBody(c, replicaRequestSchema);
    return c.json(await grantReplica(c.var.deps.db, id, req), 200);
  });

  app.get("/internal/hosts", internalOnly, async (c) => {
    const all = await listHosts(c.var.deps.db);
    const placement: Placement = {
      hosts: all.map(({ id, address, state, slots, busy, queued, apps }) => ({
        id,
        address,
        state,
        slots,
        busy,
        queued,
        apps,
      })),
    };
    return c.json(placement, 200);
  });
}
