/**
 * `PUT {host}/internal/apps/{project}/{app}`: the control plane hands the runtime host a version
 * of an app to run; the host validates it. `POST …/trial`: a deploy's trial, a replica of a version
 * started before it is current (docs/hosts.md). Never bundled into the Worker (classic zod, like
 * the app's config it carries).
 */
import * as z from "zod";
import { appConfigSchema, bundleFileSchema } from "../app-config.ts";
import { MAX_BUNDLE_FILES } from "../app-limits.ts";

export const deployRequestSchema = z.strictObject({
  version: z.number().int().positive(),
  config: appConfigSchema,
  files: z.array(bundleFileSchema).min(1).max(MAX_BUNDLE_FILES),
});
export type DeployRequest = z.infer<typeof deployRequestSchema>;

/** `POST {host}/internal/apps/{project}/{app}/trial`: the version and its digest, to start. */
export const trialRequestSchema = deployRequestSchema.extend({ digest: z.string().min(1) });
export type TrialRequest = z.infer<typeof trialRequestSchema>;

/** One line a replica wrote, as a failed trial quotes it. */
const outputLineSchema = z.object({ stream: z.enum(["stdout", "stderr"]), text: z.string() });
export type OutputLine = z.infer<typeof outputLineSchema>;

/**
 * The trial's answer (200, its head sent as soon as the host holds the files, its body once the
 * replica is ready or has failed): `started`, how long the start took and, for a managed app, the
 * functions its module exports (a host older than the field leaves it out), or why it failed
 * (`message`, as a call's 502 would say it) and the last lines the replica wrote. `fault`: whose
 * failure it was, the app's (its module threw, its server exited or never got healthy) or the
 * host's own (its sandbox, the project's secrets, the version's files copied): another host may
 * start it. A host older than the field leaves it out, which reads as the app's.
 */
export const trialAnswerSchema = z.discriminatedUnion("started", [
  z.object({
    started: z.literal(true),
    ms: z.number().int().nonnegative(),
    exports: z.array(z.string()).optional(),
  }),
  z.object({
    started: z.literal(false),
    message: z.string(),
    output: z.array(outputLineSchema).max(100),
    fault: z.enum(["app", "host"]).default("app"),
  }),
]);
export type TrialAnswer = z.infer<typeof trialAnswerSchema>;
