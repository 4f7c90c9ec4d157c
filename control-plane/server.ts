/**
 * Node entry of the control plane: `node bin/run-ts.mjs control-plane/server.ts` (compiled, as
 * `runlet start` runs it), or `tsx control-plane/server.ts`.
 */

import { join } from "node:path";
import { getConnInfo } from "@hono/node-server/conninfo";
import * as z from "zod";
import { describeZodError } from "../common/app-config.ts";
import { DEFAULT_PORT, ENV, LOOPBACK } from "../common/consts.ts";
import { makeFolders } from "../common/make-folders.ts";
import { watchSupervisor } from "../common/parent-watch.ts";
import { createControlPlane } from "./app.ts";
import { unusableBootstrapToken } from "./auth/bootstrap-token.ts";
import { fileKeyStore, loadOrCreateMasterSecret, loadOrCreateSigningKey } from "./auth/keys.ts";
import { deriveKeys } from "./auth/secret-keys.ts";
import { publicKeysOf } from "./auth/tokens.ts";
import { callerAddress } from "./behind-proxy.ts";
import { bootstrapLocal } from "./bootstrap.ts";
import { fileBundles } from "./bundles-file.ts";
import type { Deps } from "./context.ts";
import { openLibsql } from "./db/index.ts";
import { homePaths, runletHome } from "./home.ts";
import { httpRuntimeHosts } from "./host-client.ts";
import { liveHosts } from "./hosts/registry.ts";
import { serveControlPlane } from "./listen.ts";
import { keepOldBundles } from "./old-bundles.ts";
import { dropStrayBundles } from "./stray-bundles.ts";

const envSchema = z.object({
  [ENV.controlPort]: z.coerce.number().int().min(0).max(65_535).default(DEFAULT_PORT.control),
  [ENV.apiUrl]: z.string().url().default(`http://${LOOPBACK}:${DEFAULT_PORT.api}`),
  [ENV.internalToken]: z.string().min(32, "must be set (npm start creates one under RUNLET_HOME)"),
  [ENV.databaseUrl]: z.string().optional(),
  [ENV.databaseToken]: z.string().optional(),
  [ENV.trustProxy]: z.enum(["0", "1"], { error: "must be 0 or 1" }).optional(),
  [ENV.bootstrapToken]: z.string().optional(),
  // The address it listens on (0.0.0.0: all) and is known by (local.json's baseUrl): loopback by default.
  [ENV.listen]: z.union([z.literal(""), z.ipv4({ error: "must be an IPv4 address" })]).optional(),
});

async function main() {
  const parsed = envSchema.safeParse(process.env);
  if (!parsed.success) {
    console.error(`control plane: bad environment: ${describeZodError(parsed.error)}`);
    process.exit(1);
  }
  const env = parsed.data;
  const bootstrapToken = env[ENV.bootstrapToken] || undefined;
  const unusable = bootstrapToken && unusableBootstrapToken(bootstrapToken, env[ENV.internalToken]);
  if (unusable) {
    console.error(`control plane: bad environment: ${ENV.bootstrapToken}: ${unusable}`);
    process.exit(1);
  }
  const home = runletHome();
  try {
    makeFolders(home);
  } catch (err) {
    console.error(`control plane: cannot make RUNLET_HOME ${home}: ${(err as Error).message}`);
    process.exit(1);
  }
  const port = env[ENV.controlPort];
  const trustProxy = env[ENV.trustProxy] === "1";
  const { db, close } = await openLibsql(
    env[ENV.databaseUrl] ?? `file:${homePaths(home).database}`,
    env[ENV.databaseToken],
  );
  const keys = await loadOrCreateSigningKey(home);
  const publicKeys = await publicKeysOf(keys);
  const bundles = fileBundles(join(home, "bundles"));
  const hostname = env[ENV.listen] || LOOPBACK;
  // Listening everywhere (0.0.0.0), it is known on this machine at loopback.
  const baseUrl = `http://${hostname === "0.0.0.0" ? LOOPBACK : hostname}:${port}`;
  const deps: Deps = {
    db,
    keys,
    publicKeys,
    keyStore: fileKeyStore(home),
    onKeysChanged: async () => {
      const previous = deps.keys.previous.filter((p) => !p.retiredAt).map((p) => p.kid);
      console.log(
        `control plane: signing keys changed: signing with ${deps.keys.kid}; also verifying ${previous.join(", ") || "no other"}`,
      );
      if (!bootstrapToken)
        await bootstrapLocal(db, deps.keys, deps.publicKeys, {
          home,
          baseUrl,
          apiUrl: env[ENV.apiUrl],
        });
    },
    derived: await deriveKeys(await loadOrCreateMasterSecret(home)),
    clientIp: (c) => callerAddress(c, getConnInfo(c).remote.address, trustProxy),
    trustProxy,
    hosts: httpRuntimeHosts(() => liveHosts(db), env[ENV.internalToken]),
    bundles,
    apiUrl: env[ENV.apiUrl],
    internalToken: env[ENV.internalToken],
    bootstrapToken,
  };
  const app = createControlPlane(deps);
  // A control plane for others makes no user of its own: its first is claimed (runlet init).
  if (bootstrapToken) {
    console.log(
      `control plane: ${ENV.bootstrapToken} is set, so it makes no local owner: the first user is made with 'runlet init' (docs/deploy.md)`,
    );
  } else {
    await bootstrapLocal(db, keys, publicKeys, { home, baseUrl, apiUrl: env[ENV.apiUrl] });
  }
  // Before hosts may ask for them (an older checkout's RUNLET_HOME, after a `git pull`).
  const kept = await keepOldBundles(db, bundles, home).catch((err: Error) => {
    console.error(`control plane: older versions' files not looked for: ${err.message}`);
    return [];
  });
  if (kept.length > 0)
    console.log(
      `control plane: hosts may now fetch ${kept.join(", ")} (deployed before bundles were kept)`,
    );
  // Before any deploy of its own: what one cut short by a crash left (stray-bundles.ts).
  const dropped = await dropStrayBundles(db, join(home, "bundles")).catch((err: Error) => {
    console.error(`control plane: bundles no version records not looked for: ${err.message}`);
    return [];
  });
  if (dropped.length > 0)
    console.log(
      `control plane: removed ${dropped.length} bundle file(s) no version records (a deploy or a delete cut short): ${dropped.join(", ")}`,
    );

  const server = serveControlPlane(app, { port, hostname }, (info) => {
    console.log(`control plane listening on http://${hostname}:${info.port}`);
  });
  server.on("error", (err: NodeJS.ErrnoException) => {
    console.error(
      err.code === "EADDRINUSE"
        ? `control plane: port ${port} is already in use; stop what holds it or set ${ENV.controlPort}`
        : `control plane: ${err.message}`,
    );
    process.exit(1);
  });
  const stop = () => {
    server.close();
    close();
    process.exit(0);
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  // Started by `runlet start`: it ends with its supervisor, however that ends.
  watchSupervisor(stop);
}

main().catch((err) => {
  console.error(`control plane failed to start: ${(err as Error).message}`);
  process.exit(1);
});
