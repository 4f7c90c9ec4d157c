/**
 * `PUT {host}/internal/apps/{project}/{app}`: the control plane hands the runtime host a version
 * of an app to run; the host validates it. Never bundled into the Worker (classic zod, like the
 * app's config it carries).
 */
import { z } from "zod";
import { appConfigSchema, bundleFileSchema } from "../app-config.ts";

export const deployRequestSchema = z.strictObject({
  version: z.number().int().positive(),
  config: appConfigSchema,
  files: z.array(bundleFileSchema).min(1).max(5000),
});
export type DeployRequest = z.infer<typeof deployRequestSchema>;
