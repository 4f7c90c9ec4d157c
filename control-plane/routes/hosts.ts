/**
 * The installation's runtime hosts, for its operators (docs/hosts.md): `GET /v2/hosts`,
 * `DELETE /v2/hosts/{hostId}` (one that is down or stopped), and the host tokens hosts join
 * with — `POST /v2/hosts/tokens` (shown once), `GET /v2/hosts/tokens`,
 * `DELETE /v2/hosts/tokens/{tokenId}`. Not in a project's audit log: no project owns a host.
 */
import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import { LOCAL_HOST_TOKEN, REGISTRY_STATES } from "../../common/protocol/hosts.ts";
import { operatorOnly } from "../auth/access.ts";
import type { AppEnv } from "../context.ts";
import { principalNames } from "../db/principal-names.ts";
import { ApiError } from "../errors.ts";
import { type Removal, removeHost } from "../hosts/leaving.ts";
import { listHosts } from "../hosts/registry.ts";
import { createHostToken, listHostTokens, revokeHostToken } from "../hosts/tokens.ts";
import { bearerAuth, errorResponses, smallBody } from "../openapi.ts";
import { displayName } from "./projects.ts";

/**
 * A join token's name: not `local`, the name of the token `runlet start` makes for its own hosts
 * (a second one was told apart from it by its id alone, and `runlet hosts revoke` guarded it).
 */
const joinTokenName = displayName.refine((name) => name !== LOCAL_HOST_TOKEN, {
  message: `'${LOCAL_HOST_TOKEN}' is the name of the token runlet start makes for its own hosts: choose another`,
});

const iso = (ms: number) => new Date(ms).toISOString();
const time = () => z.string().openapi({ format: "date-time" });

const hostStateSchema = z.enum([...REGISTRY_STATES, "down"]).openapi({
  description:
    "up; draining (stopping: takes no new work); drained (an operator drained it: no new " +
    "work, its replicas retire as their calls end); stopped (it stopped gracefully and said so: " +
    "its work ended, it holds no replica); down (no heartbeat for 15 s: it crashed, froze or " +
    "cannot reach the control plane).",
});

const hostSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    address: z.string().openapi({ format: "uri" }),
    tokenId: z.string().openapi({ description: "The join token it registered with." }),
    state: hostStateSchema,
    slots: z.number().int().openapi({ description: "Replicas it runs at once." }),
    memoryMb: z.number().int(),
    busy: z.number().int().openapi({ description: "Calls running, at its last heartbeat." }),
    queued: z.number().int().openapi({ description: "Calls waiting for a slot." }),
    registeredAt: time(),
    seenAt: time().openapi({ description: "Its last heartbeat." }),
    unreachable: z
      .object({ at: time(), error: z.string() })
      .optional()
      .openapi({
        description:
          "Set for a minute after the run API's Worker could not connect to the host at its " +
          "address (or until it registers again): no new work goes there meanwhile. `error` is " +
          "what the Worker met.",
      }),
    apps: z.array(
      z.object({
        project: z.string(),
        app: z.string(),
        replicas: z.number().int(),
        ready: z.number().int(),
        busy: z.number().int(),
      }),
    ),
  })
  .openapi("Host");

const hostTokenSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    createdBy: z.string(),
    createdByName: z.string().nullable().openapi({
      description: "The name of the user who made it; null once that user is deleted.",
    }),
    createdAt: time(),
    revokedAt: time().nullable(),
    hosts: z.array(z.object({ id: z.string(), name: z.string(), state: hostStateSchema })).openapi({
      description:
        "The hosts registered with it, oldest first: those its revoke stops (a removed host is not listed).",
    }),
  })
  .openapi("HostToken");

/** The 400, 401 and 403 of an operator's route (403: not an operator). */
export const operatorErrors = () => {
  const { 400: bad, 401: unauthorized, 403: forbidden } = errorResponses();
  return { 400: bad, 401: unauthorized, 403: { ...forbidden, description: "Not an operator." } };
};

const listHostsRoute = createRoute({
  method: "get",
  path: "/v2/hosts",
  operationId: "listHosts",
  summary: "Every runtime host that registered, with its state and load (operators).",
  security: bearerAuth,
  middleware: [operatorOnly] as const,
  responses: {
    200: {
      description: "The hosts, oldest registration first.",
      content: { "application/json": { schema: z.object({ hosts: z.array(hostSchema) }) } },
    },
    ...operatorErrors(),
  },
});

const { 409: stillHeard } = errorResponses({
  409: "The host is up, draining or drained (heard from within 15 s): stop it first.",
});

/** The 404 of a route about one host. */
export const { 404: noSuchHost } = errorResponses({ 404: "No such host." });

/** The path of a route about one host: `{hostId}`. */
export const hostIdParams = z.object({
  hostId: z.string().openapi({ param: { name: "hostId", in: "path" }, example: "hst_…" }),
});

const removeHostRoute = createRoute({
  method: "delete",
  path: "/v2/hosts/{hostId}",
  operationId: "removeHost",
  summary: "Removes a host that is down or stopped from the registry (operators).",
  description:
    "A host that is up, draining or drained is refused (409): stop it first. What it held of each app's " +
    "max_replicas is free at once. If it comes back with a valid token, it registers as a new " +
    "host (a new id); revoke its token to keep it out.",
  security: bearerAuth,
  middleware: [operatorOnly] as const,
  request: { params: hostIdParams },
  responses: {
    204: { description: "Removed." },
    ...operatorErrors(),
    404: noSuchHost,
    409: stillHeard as NonNullable<typeof stillHeard>,
  },
});

const { 409: nameTaken } = errorResponses({
  409: "A live join token has this name (the message names its id): revoke it, or pick another name.",
});

const createTokenRoute = createRoute({
  method: "post",
  path: "/v2/hosts/tokens",
  operationId: "createHostToken",
  summary: "A host token, for `runlet host` on another machine: shown once (operators).",
  security: bearerAuth,
  middleware: [operatorOnly, smallBody] as const,
  request: {
    body: {
      required: true,
      content: { "application/json": { schema: z.strictObject({ name: joinTokenName }) } },
    },
  },
  responses: {
    201: {
      description: "The token (only its hash is kept: copy it now).",
      content: {
        "application/json": { schema: hostTokenSchema.extend({ token: z.string() }) },
      },
    },
    ...operatorErrors(),
    409: nameTaken as NonNullable<typeof nameTaken>,
  },
});

const listTokensRoute = createRoute({
  method: "get",
  path: "/v2/hosts/tokens",
  operationId: "listHostTokens",
  summary: "The host tokens, never the tokens themselves (operators).",
  security: bearerAuth,
  middleware: [operatorOnly] as const,
  responses: {
    200: {
      description: "The host tokens, oldest first.",
      content: {
        "application/json": { schema: z.object({ tokens: z.array(hostTokenSchema) }) },
      },
    },
    ...operatorErrors(),
  },
});

const revokeTokenRoute = createRoute({
  method: "delete",
  path: "/v2/hosts/tokens/{tokenId}",
  operationId: "revokeHostToken",
  summary: "Revokes a host token: its hosts are refused from their next heartbeat (operators).",
  security: bearerAuth,
  middleware: [operatorOnly] as const,
  request: {
    params: z.object({
      tokenId: z.string().openapi({ param: { name: "tokenId", in: "path" }, example: "htk_…" }),
    }),
  },
  responses: {
    204: { description: "Revoked." },
    ...operatorErrors(),
    404: errorResponses()[404],
  },
});

export function registerHosts(app: OpenAPIHono<AppEnv>) {
  app.openapi(listHostsRoute, async (c) => {
    const hosts = (await listHosts(c.var.deps.db)).map((h) => ({
      ...h,
      registeredAt: iso(h.registeredAt),
      seenAt: iso(h.seenAt),
      unreachable: h.unreachable && { ...h.unreachable, at: iso(h.unreachable.at) },
    }));
    return c.json({ hosts }, 200);
  });

  app.openapi(removeHostRoute, async (c) => {
    const { hostId } = c.req.valid("param");
    const removal = await removeHost(c.var.deps.db, hostId);
    if (!removal) throw new ApiError("not_found", `no host '${hostId}' in the registry`);
    if (!removal.removed) throw new ApiError("conflict", stillThere(hostId, removal));
    return c.body(null, 204);
  });

  app.openapi(createTokenRoute, async (c) => {
    const { name } = c.req.valid("json");
    const made = await createHostToken(c.var.deps.db, { name, createdBy: c.var.principal.id });
    return c.json(
      {
        id: made.id,
        name: made.name,
        token: made.token,
        createdBy: c.var.principal.id,
        createdByName: c.var.principal.name,
        createdAt: iso(made.createdAt),
        revokedAt: null,
        hosts: [],
      },
      201,
    );
  });

  app.openapi(listTokensRoute, async (c) => {
    const [listed, registered] = await Promise.all([
      listHostTokens(c.var.deps.db),
      listHosts(c.var.deps.db),
    ]);
    const names = await principalNames(
      c.var.deps.db,
      listed.map((t) => t.createdBy),
    );
    const tokens = listed.map((t) => ({
      ...t,
      createdByName: names.get(t.createdBy) ?? null,
      createdAt: iso(t.createdAt),
      revokedAt: t.revokedAt === null ? null : iso(t.revokedAt),
      hosts: registered
        .filter((h) => h.tokenId === t.id)
        .map(({ id, name, state }) => ({ id, name, state })),
    }));
    return c.json({ tokens }, 200);
  });

  app.openapi(revokeTokenRoute, async (c) => {
    const { tokenId } = c.req.valid("param");
    if (!(await revokeHostToken(c.var.deps.db, tokenId)))
      throw new ApiError("not_found", `no host token '${tokenId}' that is not revoked`);
    return c.body(null, 204);
  });
}

/** Why a host that is still heard from is not removed, and what to do first. */
function stillThere(id: string, { state, seenAt }: Extract<Removal, { removed: false }>): string {
  const ago = Math.max(0, Math.round((Date.now() - seenAt) / 1000));
  const heard = `its last heartbeat ${ago} s ago`;
  return state === "draining"
    ? `host '${id}' is draining (${heard}): it is stopping; remove it once it is stopped or down`
    : `host '${id}' is ${state} (${heard}): stop it first (Ctrl-C on its 'runlet host', or revoke its token with 'runlet hosts revoke'), then remove it once it is stopped or down`;
}
