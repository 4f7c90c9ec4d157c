/**
 * `GET {control plane}/internal/apps`: every deployed app. The Worker reads it to wake each
 * app's shards after a restart. zod/mini: the Worker bundles this file.
 */
import * as z from "zod/mini";

export const appListSchema = z.object({
  apps: z.array(z.object({ project: z.string(), app: z.string() })),
});
export type AppList = z.infer<typeof appListSchema>;
