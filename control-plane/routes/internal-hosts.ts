/**
 * The runtime hosts' side of the registry (docs/hosts.md), with a host token:
 * `POST /internal/hosts` registers one, `POST /internal/hosts/{hostId}/heartbeat` keeps it
 * alive, `POST /internal/hosts/{hostId}/replicas` asks for one more replica of an app,
 * `POST /internal/hosts/{hostId}/leave` says it stopped gracefully,
 * `GET /internal/bundles/{project}/{app}/{version}` fetches a version's bundle. And the
 * Worker's, with the internal token: `GET /internal/hosts`, where it places work, and
 * `POST /internal/hosts/{hostId}/unreachable`, a host it could not connect to.
 */
import type { OpenAPIHono } from "@hono/zod-openapi";
import { eq } from "drizzle-orm";
import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import {
  type CurrentVersion,
  HEARTBEAT_MS,
  heartbeatSchema,
  type Placement,
  type ProjectSecrets,
  placementState,
  type Registered,
  registrationSchema,
  replicaRequestSchema,
  unreachableReportSchema,
} from "../../common/protocol/hosts.ts";
import { internalOnly } from "../auth/internal-only.ts";
import type { AppEnv } from "../context.ts";
import { projects, secrets } from "../db/schema.ts";
import { ApiError } from "../errors.ts";
import { recordHeartbeat } from "../hosts/heartbeat.ts";
import { leaveHost } from "../hosts/leaving.ts";
import {
  currentVersion,
  grantReplica,
  hostOf,
  listHosts,
  recordedDigest,
  registerHost,
} from "../hosts/registry.ts";
import { hostTokenId, hostTokenRefusal } from "../hosts/tokens.ts";
import { markUnreachable } from "../hosts/unreachable.ts";
import { openSecret } from "../secrets.ts";
import { jsonBody } from "../validate.ts";

type HostEnv = AppEnv & { Variables: { hostTokenId: string } };

/** A valid, unrevoked host token (401 otherwise); its id in `c.var.hostTokenId`. */
const hostToken = createMiddleware<HostEnv>(async (c, next) => {
  const given = /^Bearer[ ]+(\S+)\s*$/i.exec(c.req.header("authorization") ?? "")?.[1] ?? "";
  const id = await hostTokenId(c.var.deps.db, given);
  if (!id) throw new ApiError("unauthorized", await hostTokenRefusal(c.var.deps.db, given));
  c.set("hostTokenId", id);
  await next();
});

/**
 * The path's host, registered with the token presented (404: register again). One that left is
 * 404 too, but to `leave` again: a host that runs registers anew, and a late heartbeat of one
 * that stopped does not make it `up` again with replicas it no longer has.
 */
async function pathHost(c: Context<HostEnv>, left: "left too" | "not left" = "not left") {
  const id = c.req.param("hostId") ?? "";
  const host = await hostOf(c.var.deps.db, id, c.var.hostTokenId);
  if (!host) throw new ApiError("not_found", `no host '${id}' registered with this token`);
  if (host.state === "stopped" && left === "not left")
    throw new ApiError("not_found", `host '${id}' left the registry: register again`);
  return host.id;
}

export function registerInternalHosts(app: OpenAPIHono<AppEnv>) {
  app.post("/internal/hosts", hostToken, async (c) => {
    const reg = await jsonBody(c, registrationSchema);
    const { db, internalToken } = c.var.deps;
    if (!internalToken) throw new ApiError("unavailable", "no internal token is set");
    const hostId = await registerHost(db, c.var.hostTokenId, reg);
    return c.json({ hostId, internalToken, heartbeatMs: HEARTBEAT_MS } satisfies Registered, 200);
  });

  app.post("/internal/hosts/:hostId/heartbeat", hostToken, async (c) => {
    const id = await pathHost(c);
    const beat = await jsonBody(c, heartbeatSchema);
    return c.json(await recordHeartbeat(c.var.deps.db, id, beat), 200);
  });

  app.post("/internal/hosts/:hostId/replicas", hostToken, async (c) => {
    const id = await pathHost(c);
    const req = await jsonBody(c, replicaRequestSchema);
    return c.json(await grantReplica(c.var.deps.db, id, req), 200);
  });

  // A graceful stop's end: work ended, replicas stopped. Its places are free at once, and the
  // Worker sends it nothing (docs/hosts.md, "A host that stops, a host removed").
  app.post("/internal/hosts/:hostId/leave", hostToken, async (c) => {
    await leaveHost(c.var.deps.db, await pathHost(c, "left too"));
    return c.body(null, 204);
  });

  app.get("/internal/bundles/:project/:app", hostToken, async (c) => {
    const { project, app } = c.req.param();
    const current = await currentVersion(c.var.deps.db, project, app);
    if (!current) throw new ApiError("not_found", `app '${app}' is not deployed in '${project}'`);
    return c.json(current satisfies CurrentVersion, 200);
  });

  app.get("/internal/bundles/:project/:app/:version{[1-9][0-9]{0,8}}", hostToken, async (c) => {
    const { project, app, version } = c.req.param();
    const { db, bundles } = c.var.deps;
    const key = { project, app, version: Number(version) };
    // The bundle the database recorded (by its digest); one kept before digests named bundles.
    const digest = await recordedDigest(db, project, app, key.version);
    const bundle =
      digest === undefined
        ? undefined
        : ((digest ? await bundles.get({ ...key, digest }) : undefined) ??
          (await bundles.get(key)));
    if (bundle === undefined)
      throw new ApiError("not_found", `no version ${version} of app '${app}' in '${project}'`);
    return c.body(bundle, 200, { "content-type": "application/json" });
  });

  // A replica's environment: read as each replica starts, so one started after a change sees
  // it. Not audited: hosts read it for every new replica, and no person sees the values. With
  // the revision they are (one batch: the same moment), which the replica keeps: a host that
  // hears of a later one replaces it.
  app.get("/internal/secrets/:project", hostToken, async (c) => {
    const { project } = c.req.param();
    const { db, derived } = c.var.deps;
    const [rows, [revised]] = (await db.batch([
      db
        .select({ name: secrets.name, sealed: secrets.sealed })
        .from(secrets)
        .where(eq(secrets.projectId, project)),
      db
        .select({ revision: projects.secretsRevision })
        .from(projects)
        .where(eq(projects.id, project)),
    ])) as [Array<{ name: string; sealed: string }>, Array<{ revision: number } | undefined>];
    const env: Record<string, string> = {};
    for (const { name, sealed } of rows)
      env[name] = await openSecret(derived.secrets, project, name, sealed);
    return c.json({ env, revision: revised?.revision ?? 0 } satisfies ProjectSecrets, 200);
  });

  app.get("/internal/hosts", internalOnly, async (c) => {
    const all = await listHosts(c.var.deps.db);
    const placement: Placement = {
      hosts: all.map(({ id, address, state, slots, busy, queued, apps, unreachable }) => ({
        id,
        address,
        state: placementState(state),
        slots,
        busy,
        queued,
        apps,
        ...(unreachable ? { unreachable } : {}),
      })),
    };
    return c.json(placement, 200);
  });

  // The Worker could not connect to the host at its address: placement passes it over for a
  // while, and the operator's listing says so (hosts/unreachable.ts).
  app.post("/internal/hosts/:hostId/unreachable", internalOnly, async (c) => {
    const id = c.req.param("hostId");
    const { error, checkedAt } = await jsonBody(c, unreachableReportSchema);
    if (!(await markUnreachable(c.var.deps.db, id, error, checkedAt)))
      throw new ApiError("not_found", `no host '${id}' in the registry`);
    return c.body(null, 204);
  });
}
