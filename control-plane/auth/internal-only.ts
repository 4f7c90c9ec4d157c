import { createMiddleware } from "hono/factory";
import { sameSecret } from "../../common/same-secret.ts";
import type { AppEnv } from "../context.ts";
import { ApiError } from "../errors.ts";

/** `/internal/*`: Runlet's own components only, with the internal token. Not in the OpenAPI document. */
export const internalOnly = createMiddleware<AppEnv>(async (c, next) => {
  const expected = c.var.deps.internalToken;
  const given = /^Bearer[ ]+(\S+)\s*$/i.exec(c.req.header("authorization") ?? "")?.[1] ?? "";
  if (!expected || !(await sameSecret(given, expected))) {
    throw new ApiError("unauthorized", "internal routes need the internal token");
  }
  await next();
});
