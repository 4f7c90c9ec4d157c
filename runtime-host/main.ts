/**
 * Process entry of the runtime host: `node bin/run-ts.mjs runtime-host/main.ts` (compiled, as
 * `runlet start` and `runlet host` run it), or `node --import tsx runtime-host/main.ts`.
 *
 * SIGTERM or SIGINT stop it gracefully: new work is refused, what is in flight gets the grace of
 * `shutdownGraceMs` (see server.ts), and a host in a registry then says it left (`stopped`); a
 * second signal ends the grace at once. Started by `runlet start` or `runlet host`, it also
 * stops — at once, as nothing would take its reports, and without a word to the registry, which
 * lists it `down` as a host that crashed — when that command is gone.
 */
import { readFileSync } from "node:fs";
import { hostname, totalmem } from "node:os";
import { resolve } from "node:path";
import * as z from "zod";
import { describeZodError } from "../common/app-config.ts";
import { DEFAULT_PORT, ENV, HOST_REFUSED_EXIT } from "../common/consts.ts";
import { exitWithin, watchSupervisor } from "../common/parent-watch.ts";
import { DEFAULT_LIMITS } from "./limits.ts";
import { listenAddressOf } from "./listen-address.ts";
import { Refused } from "./refusal.ts";
import { detectSandbox, sandboxSettingsOf, sandboxSettingsSchema } from "./sandbox/sandbox.ts";
import { startHost } from "./server.ts";

/** The machine's memory, which a host takes as its own unless told its share. */
const MACHINE_MB = Math.floor(totalmem() / 2 ** 20);
/** Replicas a host runs at once by default: one per 256 MiB of its memory, at most 256. */
const slotsFor = (memoryMb: number) => Math.max(1, Math.min(256, Math.floor(memoryMb / 256)));

const envSchema = z
  .object({
    [ENV.hostPort]: z.coerce.number().int().min(0).max(65_535).default(DEFAULT_PORT.host),
    [ENV.home]: z.string().optional(),
    [ENV.baseUrl]: z.url({ error: "must be the control plane's URL" }).optional(),
    [ENV.internalToken]: z.string().min(32, "must be at least 32 characters").optional(),
    /** Joining a control plane's registry (docs/hosts.md): the internal token comes from it. */
    [ENV.hostToken]: z.string().min(1).optional(),
    [ENV.hostTokenFile]: z.string().min(1).optional(),
    [ENV.hostName]: z.string().min(1).max(64).default(hostname().slice(0, 64)),
    [ENV.hostAddress]: z
      .url({ protocol: /^https?$/, error: "must be this host's http(s) URL" })
      .optional(),
    [ENV.hostListen]: z.union([z.ipv4(), z.ipv6()], { error: "must be an IP address" }).optional(),
    [ENV.hostSlots]: z.coerce.number().int().min(1).max(100_000).optional(),
    // Its share of the machine's memory where hosts share one (runlet start's RUNLET_HOSTS).
    [ENV.hostMemoryMb]: z.coerce.number().int().min(1).max(MACHINE_MB).default(MACHINE_MB),
    ...sandboxSettingsSchema,
  })
  .refine((env) => env[ENV.internalToken] || env[ENV.hostToken] || env[ENV.hostTokenFile], {
    error: `set ${ENV.hostToken} (a host token from 'runlet hosts token') or ${ENV.internalToken}`,
  })
  .refine((env) => !(env[ENV.hostToken] || env[ENV.hostTokenFile]) || env[ENV.baseUrl], {
    error: `a host that joins with ${ENV.hostToken} needs the control plane's URL in ${ENV.baseUrl}`,
  });

async function main(): Promise<void> {
  const parsed = envSchema.safeParse(process.env);
  if (!parsed.success) {
    console.error(`runtime host: bad environment: ${describeZodError(parsed.error)}`);
    process.exit(1);
  }
  const env = parsed.data;
  // Told to stop while it starts (a control plane it cannot reach yet, Ctrl-C): the start gives
  // up and stops the spares it started. Until 2026-11-27 the signal's default action ended the
  // process, and their mounted folders and network namespaces stayed behind.
  const starting = new AbortController();
  let onSignal = (signal: NodeJS.Signals) => starting.abort(signal);
  let onSupervisorGone = () => {
    exitWithin(5_000);
    starting.abort("its supervisor is gone");
  };
  let onRefused: (reason: string) => void = () => process.exit(1);
  watchSupervisor(() => onSupervisorGone());
  process.on("SIGINT", () => onSignal("SIGINT"));
  process.on("SIGTERM", () => onSignal("SIGTERM"));
  const controlPlaneUrl = env[ENV.baseUrl];
  const token = env[ENV.hostToken];
  const tokenFile = env[ENV.hostTokenFile];
  // Read at each registration: `runlet start` may replace a revoked one as the host starts.
  const hostToken = token
    ? () => token
    : tokenFile
      ? () => readFileSync(tokenFile, "utf8").trim()
      : undefined;
  const address = env[ENV.hostAddress];
  const host = await startHost({
    port: env[ENV.hostPort],
    hostname: env[ENV.hostListen] ?? listenAddressOf(address),
    home: resolve(env[ENV.home] || ".runlet"),
    internalToken: env[ENV.internalToken],
    controlPlaneUrl,
    sandbox: detectSandbox(sandboxSettingsOf(env)),
    join:
      hostToken && controlPlaneUrl
        ? {
            controlPlaneUrl,
            hostToken,
            refused: (reason: string) => onRefused(reason),
            name: env[ENV.hostName],
            address,
            slots: env[ENV.hostSlots] ?? slotsFor(env[ENV.hostMemoryMb]),
            memoryMb: env[ENV.hostMemoryMb],
          }
        : undefined,
    signal: starting.signal,
  }).catch((err: unknown) => {
    if (!starting.signal.aborted) throw err;
    console.log(`runtime host: ${starting.signal.reason} before it had started; stopped`);
    process.exit(0);
  });
  const joined = host.hostId ? ` (host ${host.hostId} of ${controlPlaneUrl})` : "";
  console.log(`runtime host listening on ${host.url}${joined}`);

  let stopping = false;
  const stop = (graceful: boolean, why: string, exitCode = 0) => {
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
      () => process.exit(exitCode),
      (err: unknown) => {
        console.error(`runtime host: stopping failed: ${(err as Error).message}`);
        process.exit(1);
      },
    );
  };
  onSignal = (signal) => stop(true, signal);
  // Its token was revoked: the Worker sends it nothing more, and the operator meant it to stop.
  onRefused = (reason) => stop(true, reason, HOST_REFUSED_EXIT);
  onSupervisorGone = () => {
    exitWithin(5_000);
    stop(false, "its supervisor is gone");
  };
}

main().catch((err: unknown) => {
  const inUse = ((err as Error).cause as NodeJS.ErrnoException | undefined)?.code === "EADDRINUSE";
  // `runlet host` sets RUNLET_HOST_PORT from its --port, which its user knows it by.
  const hint = inUse
    ? `: stop what holds it, or give a free port (runlet host --port N, or ${ENV.hostPort})`
    : "";
  console.error(`runtime host failed to start: ${(err as Error).message}${hint}`);
  process.exit(err instanceof Refused ? HOST_REFUSED_EXIT : 1);
});
