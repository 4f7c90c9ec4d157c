// The R2 bundle store inside workerd, on the bucket `BUNDLES` of wrangler.toml's control-plane
// environment (local R2, as `wrangler dev --env control-plane` gives it).
import { env } from "cloudflare:test";
import { r2Bundles } from "./bundles.ts";
import { bundleStoreCases } from "./testing/bundle-store.cases.ts";

bundleStoreCases("R2", async () => r2Bundles(env.BUNDLES));
