/**
 * Process entry of the runtime host: `node --import tsx runtime-host/main.ts`.
 *
 * SIGTERM or SIGINT stop it gracefully: new work is refused, what is in flight gets the grace of
 * `shutdownGraceMs` (see server.ts); a second signal stops it at once. Started by `runlet start`,
 * it also stops — at once, as nothing would take its reports — when its supervisor is gone.
 */
import { resolve } from "node:path";
import { z } from "zod";
import { describeZodError } from "../common/app-config.ts";
import { DEFAULT_PORT, ENV } from "../common/consts.ts";
import { exitWithin, watchSupervisor } from "../common/parent-watch.ts";
import { DEFAULT_LIMITS } from "./limits.ts";
import { detectSandbox, sandboxSettingsOf, sandboxSettingsSchema } from "./sandbox/sandbox.ts";
import { startHost } from "./server.ts";

const envSchema = z.object({
  [ENV.hostPort]: z.coerce.number().int().min(0).max(65_535).default(DEFAULT_PORT.host),
  [ENV.home]: z.string().optional(),
  [ENV.baseUrl]: z.url({ error: "must be the control plane's URL" }).optional(),
  [ENV.internalToken]: z
    .string({ error: "must be set to the internal token the components share" })
    .min(32, "must be at least 32 characters"),
  ...sandboxSettingsSchema,
});

async function main(): Promise<void> {
  const parsed = envSchema.safeParse(process.env);
  if (!parsed.success) {
    console.error(`runtime host: bad environment: ${describeZodError(parsed.error)}`);
    process.exit(1);
  }
  const env = parsed.data;
  // Gone before the host is up: nothing to stop yet.
  let onSupervisorGone: () => void = () => process.exit(1);
  watchSupervisor(() => onSupervisorGone());
  const host = await startHost({
    port: env[ENV.hostPort],
    home: resolve(env[ENV.home] || ".runlet"),
    internalToken: env[ENV.internalToken],
    controlPlaneUrl: env[ENV.baseUrl],
    sandbox: detectSandbox(sandboxSettingsOf(env)),
  });
  console.log(`runtime host listening on ${host.url}`);

  let stopping = false;
  const stop = (graceful: boolean, why: string) => {
    if (stopping) {
      // Told again, or its supervisor went meanwhile: the grace ends now.
      void host.close();
      return;
    }
    stopping = true;
    const grace = graceful ? DEFAULT_LIMITS.shutdownGraceMs : 0;
    console.log(
      `runtime host: ${why}; stopping${grace ? ` (up to ${grace / 1000} s for work in flight)` : ""}`,
    );
    // However a stop goes, the process ends: replicas are stopped within their own grace.
    exitWithin(grace + 15_000);
    host.close({ graceful }).then(
      () => process.exit(0),
      (err: unknown) => {
        console.error(`runtime host: stopping failed: ${(err as Error).message}`);
        process.exit(1);
      },
    );
  };
  process.on("SIGINT", () => stop(true, "SIGINT"));
  process.on("SIGTERM", () => stop(true, "SIGTERM"));
  onSupervisorGone = () => {
    exitWithin(5_000);
    stop(false, "its supervisor is gone");
  };
}

main().catch((err: unknown) => {
  const inUse = ((err as Error).cause as NodeJS.ErrnoException | undefined)?.code === "EADDRINUSE";
  const hint = inUse ? `: stop what holds it, or set ${ENV.hostPort} to a free port` : "";
  console.error(`runtime host failed to start: ${(err as Error).message}${hint}`);
  process.exit(1);
});
