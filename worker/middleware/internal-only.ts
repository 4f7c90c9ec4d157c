/** `/internal/*`: only with the internal token, as the runtime host and `runlet start` send it. */
import { createMiddleware } from "hono/factory";
import { sameSecret } from "../../common/same-secret.ts";
import type { WorkerEnv } from "../env.ts";
import { RunApiError } from "../errors.ts";

export const internalOnly = createMiddleware<WorkerEnv>(async (c, next) => {
  const given = /^Bearer (.+)$/.exec(c.req.header("authorization") ?? "")?.[1] ?? "";
  if (!(await sameSecret(given, c.env.INTERNAL_TOKEN)))
    throw new RunApiError(401, "internal route: invalid token");
  await next();
});
