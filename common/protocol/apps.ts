/**
 * `GET {control plane}/internal/apps`: every deployed app. The Worker reads it to wake each
 * app's shards after a restart. zod/mini: the Worker bundles this file.
 */
import * as z from "zod/mini";

export const appListSchema = z.object({
  apps: z.array(z.object({ project: z.string(), app: z.string() })),
});
export type AppList = z.infer<typeof appListSchema>;

/**
 * `POST {worker}/internal/wake`'s body, optional: `objects` are the ids of the run shards that
 * have storage (`runlet start` reads them from wrangler's folder, `<id>.sqlite` per object). The
 * Worker wakes only those; without it, every shard of every app, each made if it did not exist
 * (4 objects per app, 48 KB of SQLite each, even for apps never run async).
 */
export const wakeRequestSchema = z.object({
  objects: z.optional(z.array(z.string().check(z.maxLength(128)))),
});
export type WakeRequest = z.infer<typeof wakeRequestSchema>;
