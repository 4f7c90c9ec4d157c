/**
 * The installation's runtime hosts, for its operators (docs/hosts.md): `GET /v2/hosts`, and the
 * host tokens hosts join with — `POST /v2/hosts/tokens` (shown once), `GET /v2/hosts/tokens`,
 * `DELETE /v2/hosts/tokens/{tokenId}`. Not in a project's audit log: no project owns a host.
 */
import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import { operatorOnly } from "../auth/access.ts";
import type { AppEnv } from "../context.ts";
import { ApiError } from "../errors.ts";
import { createHostToken, listHosts, listHostTokens, revokeHostToken } from "../hosts/registry.ts";
import { bearerAuth, errorResponses, smallBody } from "../openapi.ts";
import { displayName } from "./projects.ts";

const iso = (ms: number) => new Date(ms).toISOString();
const time = () => z.string().openapi({ format: "date-time" });

const hostSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    address: z.string().openapi({ format: "uri" }),
    state: z.enum(["up", "draining", "stopped", "down"]).openapi({
      description:
        "up; draining (stopping: takes no new work); stopped (it stopped gracefully and said so: " +
        "its work ended, it holds no replica); down (no heartbeat for 15 s: it crashed, froze or " +
        "cannot reach the control plane).",
    }),
    slots: z.number().int().openapi({ description: "Replicas it runs at once." }),
    memoryMb: z.number().int(),
    busy: z.number().int().openapi({ description: "Calls running, at its last heartbeat." }),
    queued: z.number().int().openapi({ description: "Calls waiting for a slot." }),
    registeredAt: time(),
    seenAt: time().openapi({ description: "Its last heartbeat." }),
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
    createdAt: time(),
    revokedAt: time().nullable(),
  })
  .openapi("HostToken");

const operatorErrors = () => {
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
      content: { "application/json": { schema: z.strictObject({ name: displayName }) } },
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
    }));
    return c.json({ hosts }, 200);
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
        createdAt: iso(made.createdAt),
        revokedAt: null,
      },
      201,
    );
  });

  app.openapi(listTokensRoute, async (c) => {
    const tokens = (await listHostTokens(c.var.deps.db)).map((t) => ({
      ...t,
      createdAt: iso(t.createdAt),
      revokedAt: t.revokedAt === null ? null : iso(t.revokedAt),
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
