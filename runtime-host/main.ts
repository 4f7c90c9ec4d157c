/**
 * Process entry of the runtime host: `node --import tsx runtime-host/main.ts`.
 *
 * SIGTERM or SIGINT stop it gracefully: new work is refused, what is in flight gets the grace of
 * `shutdownGraceMs` (see server.ts); a second signal stops it at once. Started by `runlet start`,
 * it also stops — at once, as nothing would take its reports — when its supervisor is gone.
 */
import { hostname, totalmem } from "node:os";
import { resolve } from "node:path";
import { z } from "zod";
import { describeZodError } from "../common/app-config.ts";
import { DEFAULT_PORT, ENV } from "../common/consts.ts";
import { exitWithin, watchSupervisor } from "../common/parent-watch.ts";
import { DEFAULT_LIMITS } from "./limits.ts";
import { detectSandbox, sandboxSettingsOf, sandboxSettingsSchema } from "./sandbox/sandbox.ts";
import { startHost } from "./server.ts";

/** Replicas a host runs at once by default: one per 256 MiB of its memory, at most 256. */
const DEFAULT_SLOTS = Math.max(1, Math.min(256, Math.floor(totalmem() / 2 ** 28)));

const envSchema = z
  .object({
    [ENV.hostPort]: z.coerce.number().int().min(0).max(65_535).default(DEFAULT_PORT.host),
    [ENV.home]: z.string().optional(),
    [ENV.baseUrl]: z.url({ error: "must be the control plane's URL" }).optional(),
    [ENV.internalToken]: z.string().min(32, "must be at least 32 characters").optional(),
    /** Joining a control plane's registry (docs/hosts.md): the internal token comes from it. */
    [ENV.hostToken]: z.string().min(1).optional(),
    [ENV.hostName]: z.string().min(1).max(64).default(hostname().slice(0, 64)),
    [ENV.hostAddress]: z
      .url({ protocol: /^https?$/, error: "must be this host's http(s) URL" })
      .optional(),
    [ENV.hostSlots]: z.coerce.number().int().min(1).max(100_000).default(DEFAULT_SLOTS),
    ...sandboxSettingsSchema,
  })
  .refine((env) => env[ENV.internalToken] || env[ENV.hostToken], {
    error: `set ${ENV.hostToken} (a host token from 'runlet hosts token') or ${ENV.internalToken}`,
  })
  .refine((env) => !env[ENV.hostToken] || env[ENV.baseUrl], {
    error: `a host that joins with ${ENV.hostToken} needs the control plane's URL in ${ENV.baseUrl}`,
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
  const controlPlaneUrl = env[ENV.baseUrl];
  const hostToken = env[ENV.hostToken];
  const address = env[ENV.hostAddress];
  const host = await startHost({
    port: env[ENV.hostPort],
    // A host other machines reach listens on the address it gives them.
    hostname: address ? new URL(address).hostname.replace(/^\[|\]$/g, "") : undefined,
    home: resolve(env[ENV.home] || ".runlet"),
    internalToken: env[ENV.internalToken],
    controlPlaneUrl,
    sandbox: detectSandbox(sandboxSettingsOf(env)),
    join:
      hostToken && controlPlaneUrl
        ? {
            controlPlaneUrl,
            hostToken,
            name: env[ENV.hostName],
            address,
            slots: env[ENV.hostSlots],
            memoryMb: Math.floor(totalmem() / 2 ** 20),
          }
        : undefined,
  });
  const joined = host.hostId ? ` (host ${host.hostId} of ${controlPlaneUrl})` : "";
  console.log(`runtime host listening on ${host.url}${joined}`);

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
