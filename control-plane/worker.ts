/**
 * The control plane on Cloudflare Workers: the same Hono app as `server.ts`, over D1 instead of
 * a libSQL file (`wrangler deploy --env control-plane`). Keys come from secrets set with
 * `wrangler secret put --env control-plane`: SIGNING_KEY (the JSON the Node control plane keeps
 * in RUNLET_HOME/keys/jwt-signing-key.json), after a rotation PREVIOUS_SIGNING_KEYS (the keys
 * signed with before, still verifying until retired: docs/deploy.md) and MASTER_SECRET
 * (base64url, 32+ bytes); and, until the first user is made (`runlet init`), BOOTSTRAP_TOKEN.
 * Its cron (`scheduled`) sweeps the R2 bucket of bundles no version records (stray-bundles-r2.ts).
 */
import { drizzle } from "drizzle-orm/d1";
import { base64urlDecode } from "../common/jwt.ts";
import { type ControlPlaneApp, createControlPlane } from "./app.ts";
import { deriveKeys } from "./auth/secret-keys.ts";
import { parsePreviousKeys, type StoredKey, signingKeysFrom } from "./auth/signing.ts";
import { publicKeysOf } from "./auth/tokens.ts";
import { r2Bundles } from "./bundles.ts";
import type { Database } from "./db/index.ts";
import * as schema from "./db/schema.ts";
import { httpRuntimeHosts } from "./host-client.ts";
import { liveHosts } from "./hosts/registry.ts";
import { dropStrayR2Bundles } from "./stray-bundles-r2.ts";

export interface ControlPlaneEnv {
  DB: D1Database;
  /** Each app version's bundle, for the runtime hosts to fetch. */
  BUNDLES: R2Bucket;
  SIGNING_KEY: string;
  /** The keys signed with before SIGNING_KEY: a JSON array of {kid, publicJwk, retiredAt?}. */
  PREVIOUS_SIGNING_KEYS?: string;
  MASTER_SECRET: string;
  INTERNAL_TOKEN: string;
  /** The secret `POST /v2/init` makes the first user with; useless once one exists. */
  BOOTSTRAP_TOKEN?: string;
  /** The run API's address (the Worker's URL), for the dashboard's run pages. */
  API_URL?: string;
  /** The run API's Worker (a service binding): the dashboard's run pages reach it there. */
  RUN_API?: Fetcher;
}

let app: Promise<ControlPlaneApp> | undefined;

// Drizzle's D1 and libSQL databases differ only in their raw result types, never read.
const database = (env: ControlPlaneEnv) => drizzle(env.DB, { schema }) as unknown as Database;

async function build(env: ControlPlaneEnv): Promise<ControlPlaneApp> {
  const keys = await signingKeysFrom(
    JSON.parse(env.SIGNING_KEY) as StoredKey,
    parsePreviousKeys(env.PREVIOUS_SIGNING_KEYS, "PREVIOUS_SIGNING_KEYS"),
  );
  const db = database(env);
  return createControlPlane({
    db,
    keys,
    publicKeys: await publicKeysOf(keys),
    derived: await deriveKeys(base64urlDecode(env.MASTER_SECRET)),
    hosts: httpRuntimeHosts(() => liveHosts(db), env.INTERNAL_TOKEN),
    bundles: r2Bundles(env.BUNDLES),
    internalToken: env.INTERNAL_TOKEN,
    bootstrapToken: env.BOOTSTRAP_TOKEN || undefined,
    apiUrl: env.API_URL,
    runApi: env.RUN_API,
    clientIp: (c) => c.req.header("cf-connecting-ip"),
  });
}

export default {
  async fetch(request: Request, env: ControlPlaneEnv, ctx: ExecutionContext): Promise<Response> {
    app ??= build(env).catch((err) => {
      app = undefined;
      throw err;
    });
    return (await app).fetch(request, env, ctx);
  },
  /** The cron of wrangler.toml's `[env.control-plane]`: bundles no version records go. */
  async scheduled(controller: ScheduledController, env: ControlPlaneEnv): Promise<void> {
    const dropped = await dropStrayR2Bundles(database(env), env.BUNDLES, controller.scheduledTime);
    if (dropped.length > 0)
      console.log(
        `control plane: removed ${dropped.length} bundle(s) no version records (a deploy or a delete cut short): ${dropped.join(", ")}`,
      );
  },
} satisfies ExportedHandler<ControlPlaneEnv>;
