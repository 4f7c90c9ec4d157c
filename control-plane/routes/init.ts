/**
 * `POST /v2/init`: the first user of a control plane that has none (on Workers it never makes
 * one itself; on Node it does not when it has a bootstrap token). Proven with the bootstrap
 * token its operator set as a secret; makes an operator, a project they own and their token,
 * on the new project's audit log. docs/deploy.md, "The first user".
 */
import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import { eq, sql } from "drizzle-orm";
import { newId } from "../../common/ids.ts";
import { auditEntry } from "../audit/record.ts";
import { alreadyClaimed, bootstrapOnly } from "../auth/bootstrap-token.ts";
import { prepareToken } from "../auth/tokens.ts";
import type { AppEnv } from "../context.ts";
import { insertIf } from "../db/insert-if.ts";
import { auditLog, memberships, projects, tokens, users } from "../db/schema.ts";
import { errorResponses, errorSchema, smallBody } from "../openapi.ts";
import { expiresAtSchema, expiryMs } from "./expiry.ts";
import { displayName, planSchema, projectSchema, projectView } from "./projects.ts";

export const initBody = z
  .strictObject({
    name: displayName.openapi({ description: "The first user's name." }),
    project: displayName.optional().openapi({ description: "Their first project's name." }),
    plan: planSchema.optional(),
    expiresAt: expiresAtSchema.openapi({ description: "When their token expires." }),
  })
  .openapi("Init");

const error = (description: string) => ({
  description,
  content: { "application/json": { schema: errorSchema } },
});
const { 404: _notFound, ...errors } = errorResponses({
  409: "The control plane already has a user.",
  413: "The body is larger than 256 KiB.",
});

export const initRoute = createRoute({
  method: "post",
  path: "/v2/init",
  operationId: "init",
  summary:
    "Make the first user: an operator, with a project they own and their token (audited there). Only while no user exists.",
  security: [{ bootstrapToken: [] }],
  middleware: [bootstrapOnly, smallBody] as const,
  request: { body: { required: true, content: { "application/json": { schema: initBody } } } },
  responses: {
    201: {
      description: "The user, their project and their token (shown once).",
      content: {
        "application/json": {
          schema: z.object({
            user: z.object({ id: z.string(), name: z.string(), operator: z.literal(true) }),
            project: projectSchema,
            token: z.string(),
            expiresAt: z.string().openapi({ format: "date-time" }),
            apiUrl: z.string().nullable().openapi({ description: "The run API's address." }),
          }),
        },
      },
    },
    ...errors,
    401: error("The Authorization header is missing, or is not the bootstrap token."),
    403: error("This control plane has no bootstrap token set, or one it cannot use."),
  },
});

export function registerInit(app: OpenAPIHono<AppEnv>) {
  app.openapi(initRoute, async (c) => {
    const { db, keys } = c.var.deps;
    const {
      name,
      project: projectName = "default",
      plan = "hobby",
      expiresAt,
    } = c.req.valid("json");
    const now = Date.now();
    const expires = expiryMs(expiresAt, now);
    const user = { id: newId("usr", now), name, createdAt: now, operator: true };
    const project = { id: newId("prj", now), name: projectName, plan, createdAt: now };
    const issued = await prepareToken(keys, { subject: user.id, expiresAt: new Date(expires) });
    const principal = { type: "user" as const, id: user.id, name, tokenId: issued.id };
    const audit = (
      action: "projects.create" | "users.create",
      target: { type: string; id: string },
      metadata: Record<string, unknown>,
    ) => auditEntry(c, { action, target, principal, projectId: project.id }, "success", metadata);
    // One transaction: the user only if there is none (two claims at once make one), and the
    // rest only if this claim's user was written.
    const ours = sql`exists (select 1 from ${users} where ${users.id} = ${user.id})`;
    await db.batch([
      insertIf(db, users, user, sql`not exists (select 1 from ${users})`),
      insertIf(db, projects, project, ours),
      insertIf(db, memberships, { projectId: project.id, userId: user.id, role: "owner" }, ours),
      insertIf(db, tokens, issued.row, ours),
      insertIf(
        db,
        auditLog,
        audit("projects.create", { type: "project", id: project.id }, { name: projectName, plan }),
        ours,
      ),
      insertIf(
        db,
        auditLog,
        audit(
          "users.create",
          { type: "user", id: user.id },
          {
            name,
            role: "owner",
            operator: true,
            expiresAt: new Date(expires).toISOString(),
            by: "bootstrap token",
          },
        ),
        ours,
      ),
    ]);
    const [made] = await db.select({ id: users.id }).from(users).where(eq(users.id, user.id));
    if (!made) throw alreadyClaimed();
    console.log(
      `[control-plane] ${user.id} (${name}) is the first user and an operator, with project ${project.id}`,
    );
    return c.json(
      {
        user: { id: user.id, name, operator: true as const },
        project: projectView(project),
        token: issued.token,
        expiresAt: new Date(expires).toISOString(),
        apiUrl: c.var.deps.apiUrl ?? null,
      },
      201,
    );
  });
}
