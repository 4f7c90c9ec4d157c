/**
 * `POST /v2/projects/{projectId}/dashboard-links`: a one-time sign-in link to the project's
 * dashboard for the caller (what `runlet dashboard` prints). Any member may have one: the
 * session it opens has exactly the caller's rights, and ends when the caller's token does.
 */
import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import { access } from "../auth/access.ts";
import { publicOrigin } from "../behind-proxy.ts";
import type { AppEnv } from "../context.ts";
import { createSignInLink, LINK_MS } from "../dashboard/session.ts";
import { bearerAuth, errorResponses, projectIdParam } from "../openapi.ts";

export const createDashboardLinkRoute = createRoute({
  method: "post",
  path: "/v2/projects/{projectId}/dashboard-links",
  operationId: "createDashboardLink",
  summary: `A one-time dashboard sign-in link for the caller, valid ${LINK_MS / 60_000} minutes.`,
  security: bearerAuth,
  middleware: [access({ role: "member" })] as const,
  request: { params: projectIdParam },
  responses: {
    201: {
      description: "The link: it works once, and only before expiresAt.",
      content: {
        "application/json": {
          schema: z.object({
            url: z.string().openapi({ format: "uri" }),
            expiresAt: z.string().openapi({ format: "date-time" }),
          }),
        },
      },
    },
    ...errorResponses(),
  },
});

export function registerDashboardLinks(app: OpenAPIHono<AppEnv>) {
  app.openapi(createDashboardLinkRoute, async (c) => {
    const { principal, projectId } = c.var.access;
    const origin = publicOrigin(c, c.var.deps.trustProxy === true);
    return c.json(await createSignInLink(c.var.deps.db, principal, projectId, origin), 201);
  });
}
