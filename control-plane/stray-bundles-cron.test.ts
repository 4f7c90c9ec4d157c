// The control plane on Workers sweeps its R2 bucket from its `scheduled` handler
// (stray-bundles-r2.ts): without a cron in its wrangler environment, Cloudflare never calls it.
import { join } from "node:path";
import { expect, it } from "vitest";
import { unstable_readConfig } from "wrangler";

const CONFIG = join(new URL("..", import.meta.url).pathname, "wrangler.toml");

it("calls the control plane Worker's scheduled handler hourly, and not the run API's", () => {
  const { triggers } = unstable_readConfig({ config: CONFIG, env: "control-plane" });
  expect(triggers.crons).toEqual(["0 * * * *"]);
  // The run API's Worker (worker/index.ts) has no scheduled handler: a cron there would fail.
  expect(unstable_readConfig({ config: CONFIG }).triggers.crons ?? []).toEqual([]);
});
