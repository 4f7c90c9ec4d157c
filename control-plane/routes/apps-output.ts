/**
 * `GET /v2/projects/{projectId}/apps/{appName}/output`: everything the app's replicas wrote, as
 * a container's log — a custom app's server, a managed app's module load and timers, its runs'
 * lines too — from every runtime host that answers: the replicas running now, and the last few
 * that ended on each host (a crash's last words). The hosts keep it in memory, the newest
 * 256 KiB of each replica.
 */
import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import { access } from "../auth/access.ts";
import type { AppEnv } from "../context.ts";
import { bearerAuth, errorResponses, projectIdParam } from "../openapi.ts";
import { runLogLineSchema } from "../runs/logs.ts";
import { appOr404 } from "./app-lookup.ts";

const appOutputSchema = z
  .object({
    replicas: z.array(
      z.object({
        host: z.string().openapi({ description: "The runtime host's registry id." }),
        pid: z.number().int().nullable(),
        version: z.number().int(),
        state: z.enum(["running", "stopping", "exited"]).openapi({
          description: "stopping: it finishes its calls, then ends; exited: one of the last few.",
        }),
        startedAt: z.string().openapi({ format: "date-time" }),
        endedAt: z.string().nullable().openapi({ format: "date-time" }),
        exit: z
          .object({ code: z.number().int().nullable(), signal: z.string().nullable() })
          .nullable()
          .openapi({
            description:
              "How its process ended, once exited: its exit code, or the signal that ended it (a sandboxed process's own death by a signal shows as code 128 + the signal). Null while it runs.",
          }),
        dropped: z.number().int().openapi({
          description: "Bytes written but no longer kept: a replica keeps its newest 256 KiB.",
        }),
        lines: z.array(runLogLineSchema),
      }),
    ),
    unreachable: z
      .number()
      .int()
      .openapi({ description: "Hosts that did not answer: their replicas are not listed." }),
  })
  .openapi("AppOutput");

export const getAppOutputRoute = createRoute({
  method: "get",
  path: "/v2/projects/{projectId}/apps/{appName}/output",
  operationId: "getAppOutput",
  summary: "Everything the app's replicas wrote, newest replica first (members and owners).",
  security: bearerAuth,
  middleware: [access({ role: "member" })] as const,
  request: { params: projectIdParam.extend({ appName: z.string().max(64) }) },
  responses: {
    200: {
      description: "The replicas, now and the last few that ended, with their output.",
      content: { "application/json": { schema: appOutputSchema } },
    },
    ...errorResponses({ 404: "The project or the app does not exist." }),
  },
});

export function registerGetAppOutput(app: OpenAPIHono<AppEnv>) {
  app.openapi(getAppOutputRoute, async (c) => {
    const { db, hosts } = c.var.deps;
    const { projectId } = c.var.access;
    const { appName } = c.req.valid("param");
    await appOr404(db, projectId, appName, c.var.access.role);
    return c.json(await hosts.output({ project: projectId, app: appName }), 200);
  });
}
