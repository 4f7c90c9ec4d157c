/** What the project routes share: the body fields and the view. */
import { z } from "@hono/zod-openapi";
import type { projects } from "../db/schema.ts";
import { PLANS, RETENTION_DAYS } from "../plans.ts";

/**
 * A display name: 1 to 64 characters after trimming, no control characters, and no marks that
 * reorder text (a name with U+202E shows "bot gnp.exe" as "bot exe.png" wherever it is listed).
 */
export const displayName = z
  .string()
  .trim()
  .min(1, "must not be empty")
  .max(64, "must be at most 64 characters")
  // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point.
  .regex(/^[^\u0000-\u001f\u007f]*$/, "must not contain control characters")
  .regex(
    /^[^\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]*$/,
    "must not contain marks that change the direction of text",
  );

export const roleSchema = z.enum(["owner", "member"], { error: "must be owner or member" });

/** A service account's role: a user's, or `caller` (it calls the project's apps, no more). */
export const accountRoleSchema = z.enum(["owner", "member", "caller"], {
  error: "must be owner, member or caller",
});

export const planSchema = z.enum(PLANS, { error: `must be one of ${PLANS.join(", ")}` });

export const projectSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    plan: planSchema,
    retentionDays: z.number().int(),
    createdAt: z.string().openapi({ format: "date-time" }),
  })
  .openapi("Project");

export function projectView(
  row: Pick<typeof projects.$inferSelect, "id" | "name" | "plan" | "createdAt">,
): z.infer<typeof projectSchema> {
  return {
    id: row.id,
    name: row.name,
    plan: row.plan,
    retentionDays: RETENTION_DAYS[row.plan],
    createdAt: new Date(row.createdAt).toISOString(),
  };
}
