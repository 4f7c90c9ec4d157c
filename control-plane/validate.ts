import type { Context } from "hono";
import { safeParse, type z } from "zod";
import { describeZodError } from "../common/app-config.ts";
import { ApiError } from "./errors.ts";

/** Reads and validates a JSON body: invalid JSON or a schema miss is `400 {message}` naming the field. */
export async function jsonBody<S extends z.core.$ZodType>(
  c: Context,
  schema: S,
): Promise<z.infer<S>> {
  let raw: unknown;
  try {
    raw = await c.req.json();
  } catch {
    throw new ApiError("bad_request", "request body must be valid JSON");
  }
  const parsed = safeParse(schema, raw);
  if (!parsed.success) throw new ApiError("bad_request", describeZodError(parsed.error));
  return parsed.data;
}
