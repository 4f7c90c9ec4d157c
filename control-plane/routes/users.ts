/**
 * `POST /v2/projects/{projectId}/users`: an operator adds a user to a project they own, with a
 * token shown once (docs/deploy.md, "More users and projects"). Audited as `users.create` in
 * that project. The new user may create projects of their own (`POST /v2/projects`).
 */
import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import { newId } from "../../common/ids.ts";
import { auditSuccess } from "../audit/record.ts";
import { access, operatorToo } from "../auth/access.ts";
import { prepareToken } from "../auth/tokens.ts";
import type { AppEnv } from "../context.ts";
import { memberships, tokens, users } from "../db/schema.ts";
import { bearerAuth, errorResponses, projectIdParam, smallBody } from "../openapi.ts";
import { expiresAtSchema, expiryMs } from "./expiry.ts";
import { displayName, roleSchema } from "./projects.ts";

export const createUserBody = z
  .strictObject({
    name: displayName,
    role: roleSchema.optional().openapi({ description: "In this project; default member." }),
    operator: z
      .boolean({ error: "must be true or false" })
      .optional()
      .openapi({ description: "Runs this Runlet too (its hosts, its users); default false." }),
    expiresAt: expiresAtSchema.openapi({ description: "When their token expires." }),
  })
  .openapi("NewUser");

export const createUserRoute = createRoute({
  method: "post",
  path: "/v2/projects/{projectId}/users",
  operationId: "createUser",
  summary:
    "Add a new user to the project, with their token; an operator who owns the project only (audited).",
  security: bearerAuth,
  middleware: [
    access({
      role: "owner",
      audit: { action: "users.create", target: () => ({ type: "user", id: "(new)" }) },
      refused: "only an operator of this Runlet who owns the project may add users",
    }),
    operatorToo,
    smallBody,
  ] as const,
  request: {
    params: projectIdParam,
    body: { required: true, content: { "application/json": { schema: createUserBody } } },
  },
  responses: {
    201: {
      description: "The user and their token (shown once: hand it over securely).",
      content: {
        "application/json": {
          schema: z.object({
            id: z.string(),
            name: z.string(),
            role: roleSchema,
            operator: z.boolean(),
            expiresAt: z.string().openapi({ format: "date-time" }),
            token: z.string(),
          }),
        },
      },
    },
    ...errorResponses({ 413: "The body is larger than 256 KiB." }),
  },
});

export function registerUsers(app: OpenAPIHono<AppEnv>) {
  app.openapi(createUserRoute, async (c) => {
    const { db, keys } = c.var.deps;
    const { projectId } = c.var.access;
    const { name, role = "member", operator = false, expiresAt } = c.req.valid("json");
    const now = Date.now();
    const expires = expiryMs(expiresAt, now);
    const id = newId("usr", now);
    const audit = c.var.audit;
    if (audit) audit.target = { type: "user", id };
    const issued = await prepareToken(keys, { subject: id, expiresAt: new Date(expires) });
    const expiry = new Date(expires).toISOString();
    await db.batch([
      db.insert(users).values({ id, name, createdAt: now, operator }),
      db.insert(memberships).values({ projectId, userId: id, role }),
      db.insert(tokens).values(issued.row),
      auditSuccess(c, { name, role, operator, expiresAt: expiry }),
    ]);
    return c.json({ id, name, role, operator, expiresAt: expiry, token: issued.token }, 201);
  });
}
