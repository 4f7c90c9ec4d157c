import { defineWorkersProject } from "@cloudflare/vitest-pool-workers/config";
import { defineConfig } from "vitest/config";

/**
 * Two projects: `workers` runs inside workerd (the Worker and its Durable Object, through
 * @cloudflare/vitest-pool-workers), `node` runs the control plane, the runtime host and the
 * end-to-end tests that start all three components for real.
 */
export default defineConfig({
  test: {
    // The JSON report feeds the one-line totals that .ci/run prints.
    reporters: ["default", "json"],
    outputFile: { json: "test-results/vitest.json" },
    projects: [
      {
        test: {
          name: "node",
          environment: "node",
          include: [
            "common/**/*.test.ts",
            "control-plane/**/*.test.ts",
            "runtime-host/**/*.test.ts",
            "test/**/*.test.ts",
          ],
          testTimeout: 60_000,
          hookTimeout: 120_000,
          pool: "forks",
        },
      },
      defineWorkersProject({
        test: {
          name: "workers",
          include: ["worker/**/*.test.ts"],
          poolOptions: {
            workers: {
              singleWorker: true,
              wrangler: { configPath: "./wrangler.toml" },
              miniflare: {
                bindings: {
                  CONTROL_PLANE_URL: "http://control.test",
                  RUNTIME_HOST_URL: "http://host.test",
                  INTERNAL_TOKEN: "internal-token-for-tests",
                },
              },
            },
          },
        },
      }),
    ],
  },
});
