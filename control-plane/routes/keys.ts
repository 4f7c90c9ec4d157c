/**
 * The keys tokens are signed with, for the installation's operators (docs/deploy.md, "Rotating
 * the platform's secrets"): `GET /v2/keys`, `POST /v2/keys/rotate` (a new key signs; the one
 * before keeps verifying) and `POST /v2/keys/{kid}/retire` (its tokens are refused from then on).
 * Changing them needs a control plane that keeps its own keys (Node); on Workers they are secrets.
 * Not in a project's audit log: no project owns a key.
 */
import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import { tokenKid } from "../../common/jwt.ts";
import { operatorOnlyTo } from "../auth/access.ts";
import type { SigningKeys } from "../auth/signing.ts";
import { publicKeysOf } from "../auth/tokens.ts";
import type { AppEnv, Ctx } from "../context.ts";
import { ApiError } from "../errors.ts";
import { bearerAuth, errorResponses } from "../openapi.ts";

const keySchema = z
  .object({
    kid: z.string(),
    state: z.enum(["signing", "previous", "retired"]).openapi({
      description:
        "signing: new tokens are signed with it; previous: signed before, its tokens still verify; retired: its tokens are refused.",
    }),
    replacedAt: z.string().nullable().openapi({ format: "date-time" }),
    retiredAt: z.string().nullable().openapi({ format: "date-time" }),
  })
  .openapi("SigningKey");

const keysBody = {
  "application/json": { schema: z.object({ keys: z.array(keySchema) }) },
};

const errors = () => {
  const { 400: bad, 401: unauthorized, 403: forbidden } = errorResponses();
  return { 400: bad, 401: unauthorized, 403: { ...forbidden, description: "Not an operator." } };
};

const error = (description: string) => ({ ...errorResponses()[404], description });

const operators = operatorOnlyTo("see or change its signing keys");

const listRoute = createRoute({
  method: "get",
  path: "/v2/keys",
  operationId: "listSigningKeys",
  summary: "The keys tokens are signed with: the current one first (operators).",
  security: bearerAuth,
  middleware: [operators] as const,
  responses: { 200: { description: "The keys.", content: keysBody }, ...errors() },
});

const rotateRoute = createRoute({
  method: "post",
  path: "/v2/keys/rotate",
  operationId: "rotateSigningKey",
  summary:
    "A new key signs tokens from now on; the one before stays in the JWKS, so its tokens keep working until it is retired (operators).",
  security: bearerAuth,
  middleware: [operators] as const,
  responses: {
    201: { description: "The keys after it, the new one first.", content: keysBody },
    ...errors(),
    409: error("Its keys are secrets of its platform (Workers)."),
  },
});

const retireRoute = createRoute({
  method: "post",
  path: "/v2/keys/{kid}/retire",
  operationId: "retireSigningKey",
  summary: "Takes a previous key out of the JWKS: tokens it signed are refused (operators).",
  security: bearerAuth,
  middleware: [operators] as const,
  request: {
    params: z.object({ kid: z.string().openapi({ param: { name: "kid", in: "path" } }) }),
    query: z.strictObject({
      force: z.enum(["true", "false"]).optional().openapi({
        description: "Retire it even though the token of this request was signed with it.",
      }),
    }),
  },
  responses: {
    200: { description: "The keys after it.", content: keysBody },
    ...errors(),
    404: error("No such key."),
    409: error(
      "The signing key itself, a key already retired, the caller's own token's key (without force), or keys that are secrets of the platform.",
    ),
  },
});

function listOf(keys: SigningKeys) {
  return [
    { kid: keys.kid, state: "signing" as const, replacedAt: null, retiredAt: null },
    ...keys.previous.toReversed().map((p) => ({
      kid: p.kid,
      state: p.retiredAt ? ("retired" as const) : ("previous" as const),
      replacedAt: p.replacedAt ?? null,
      retiredAt: p.retiredAt ?? null,
    })),
  ];
}

function storeOf(c: Ctx) {
  const store = c.var.deps.keyStore;
  if (!store)
    throw new ApiError(
      "conflict",
      "this control plane's keys are secrets of its platform (SIGNING_KEY, PREVIOUS_SIGNING_KEYS on Workers): change them there (docs/deploy.md, 'Rotating the platform's secrets')",
    );
  return store;
}

/**
 * Serves the changed keys from the next request on, and tells whoever needs to know. The change
 * is made by then: what follows it failing (local.json's token not renewed) is said in the log,
 * not answered as a failure, which sent an operator to rotate again and make another key.
 */
async function adopt(c: Ctx, keys: SigningKeys): Promise<void> {
  const { deps } = c.var;
  deps.publicKeys = await publicKeysOf(keys);
  deps.keys = keys;
  try {
    await deps.onKeysChanged?.();
  } catch (err) {
    console.error(
      `control plane: signing keys changed; renewing what depends on them failed: ${err}`,
    );
  }
}

export function registerKeys(app: OpenAPIHono<AppEnv>) {
  app.openapi(listRoute, (c) => c.json({ keys: listOf(c.var.deps.keys) }, 200));

  app.openapi(rotateRoute, async (c) => {
    const keys = await storeOf(c).rotate();
    await adopt(c, keys);
    return c.json({ keys: listOf(keys) }, 201);
  });

  app.openapi(retireRoute, async (c) => {
    const { kid } = c.req.valid("param");
    const { force } = c.req.valid("query");
    const store = storeOf(c);
    const { keys } = c.var.deps;
    if (kid === keys.kid)
      throw new ApiError(
        "conflict",
        `${kid} is the key tokens are signed with now: rotate first (runlet keys rotate), then retire it`,
      );
    const previous = keys.previous.find((p) => p.kid === kid);
    if (!previous) throw new ApiError("not_found", `no signing key '${kid}'`);
    if (previous.retiredAt)
      throw new ApiError("conflict", `${kid} was already retired at ${previous.retiredAt}`);
    const own = tokenKid(c.req.header("authorization")?.replace(/^Bearer\s+/i, "") ?? "");
    if (own === kid && force !== "true")
      throw new ApiError(
        "conflict",
        `the token you are calling with was signed with ${kid}: once it is retired, that token is refused too. Get a new one first (runlet users token <your user id>), or retire it all the same (force)`,
      );
    const changed = await store.retire(kid);
    await adopt(c, changed);
    return c.json({ keys: listOf(changed) }, 200);
  });
}
