/** Process entry of the runtime host: `node --import tsx runtime-host/main.ts`. */
import { resolve } from "node:path";
import { z } from "zod";
import { describeZodError } from "../common/app-config.ts";
import { DEFAULT_PORT, ENV } from "../common/consts.ts";
import { startHost } from "./server.ts";

const envSchema = z.object({
  [ENV.hostPort]: z.coerce.number().int().min(0).max(65_535).default(DEFAULT_PORT.host),
  [ENV.home]: z.string().optional(),
  [ENV.baseUrl]: z.url({ error: "must be the control plane's URL" }).optional(),
  [ENV.internalToken]: z
    .string({ error: "must be set to the internal token the components share" })
    .min(32, "must be at least 32 characters"),
});

async function main(): Promise<void> {
  const parsed = envSchema.safeParse(process.env);
  if (!parsed.success) {
    console.error(`runtime host: bad environment: ${describeZodError(parsed.error)}`);
    process.exit(1);
  }
  const env = parsed.data;
  const host = await startHost({
    port: env[ENV.hostPort],
    home: resolve(env[ENV.home] || ".runlet"),
    internalToken: env[ENV.internalToken],
    controlPlaneUrl: env[ENV.baseUrl],
  });
  console.log(`runtime host listening on ${host.url}`);

  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    host.close().then(
      () => process.exit(0),
      (err: unknown) => {
        console.error(`runtime host: stopping failed: ${(err as Error).message}`);
        process.exit(1);
      },
    );
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
}

main().catch((err: unknown) => {
  const inUse = ((err as Error).cause as NodeJS.ErrnoException | undefined)?.code === "EADDRINUSE";
  const hint = inUse ? `: stop what holds it, or set ${ENV.hostPort} to a free port` : "";
  console.error(`runtime host failed to start: ${(err as Error).message}${hint}`);
  process.exit(1);
});
