import { readFileSync } from "node:fs";
import { defineWorkersProject, readD1Migrations } from "@cloudflare/vitest-pool-workers/config";
import { defineConfig } from "vitest/config";
import { BaseSequencer, type TestSpecification } from "vitest/node";
import { generateSigningKey } from "./common/jwt.ts";

/**
 * Five projects: `workers` runs inside workerd (the Worker and its Durable Object, through
 * @cloudflare/vitest-pool-workers), `workers-full-store` one file of it under an extra flag;
 * `control-plane-d1` runs the control plane's shared test
 * cases inside workerd on a D1 database built from the same migrations; `node` runs the control
 * plane on libSQL, the runtime host and the end-to-end tests that start all three components,
 * and `node-source-edits` one of those, alone, after all the others.
 */
/** The test that edits the Worker's source under a running stack (see its project). */
const SOURCE_EDITS = "test/supervisor-source-edits.test.ts";

/**
 * The Worker's tests inside workerd (its Durable Objects through @cloudflare/vitest-pool-workers),
 * under wrangler.toml's compatibility flags plus `flags`.
 */
function workersProject(name: string, include: string[], exclude: string[], flags: string[] = []) {
  return defineWorkersProject({
    test: {
      name,
      include,
      exclude: ["**/node_modules/**", ...exclude],
      // A guard against a hang, not a speed check: with another file running beside it, a
      // test of several seconds' pauses went past vitest's 5 s default.
      testTimeout: 30_000,
      poolOptions: {
        workers: {
          singleWorker: true,
          // Run objects keep working after a test's last call (deliveries, alarms): a
          // per-test storage snapshot cannot be taken then. Each test uses its own run ids.
          isolatedStorage: false,
          wrangler: { configPath: "./wrangler.toml" },
          miniflare: {
            ...(flags.length > 0 ? { compatibilityFlags: ["nodejs_compat", ...flags] } : {}),
            bindings: {
              CONTROL_PLANE_URL: "http://control.test",
              RUNTIME_HOST_URL: "http://host.test",
              WORKER_URL: "https://worker.test",
              INTERNAL_TOKEN: "internal-token-for-tests",
              // Short pauses and timeouts, so the whole retry table runs in seconds.
              WEBHOOK_RETRY_DELAYS_MS: "30,30",
              WEBHOOK_TIMEOUT_MS: "300",
              HOST_ANSWER_MS: "1000",
              CONTROL_PLANE_PATIENCE_MS: "1000",
            },
          },
        },
      },
    },
  });
}

/**
 * vitest's order (the longest or largest files first), with the end-to-end files that share one
 * stack (test/shared-stack.ts) moved together where the first of them stood: each of the two
 * forks then runs its share of them back to back on one stack, started once, where they came
 * far apart, each after the stack had stopped idle.
 */
class SharedStackTogether extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const together = sorted.filter(
      (spec) =>
        spec.moduleId.includes("/test/") &&
        readFileSync(spec.moduleId, "utf8").includes("sharedRunlet("),
    );
    const first = sorted.indexOf(together[0] as TestSpecification);
    if (first < 0) return sorted;
    const rest = sorted.filter((spec) => !together.includes(spec));
    return [...rest.slice(0, first), ...together, ...rest.slice(first)];
  }
}

export default defineConfig({
  test: {
    // Two files at once on two cores: most of a real stack's test is waiting on its processes.
    maxWorkers: 2,
    // The `node` projects' files take turns in two forks that stay up, instead of a fresh process
    // each: a fork's start and its imports (hono, zod, drizzle, libSQL, again for each of some
    // 150 files) cost about 0.6 s a file on two cores, over a minute of the suite (common/ and
    // cli/ alone: 56 s, 37 s so). Modules stay loaded from one file to the next: no test needs
    // them fresh (compiled.test.ts asks for that itself, vi.resetModules), and each file puts
    // back what it changes of the process (env stubs, cwd, fake timers) in its own hooks.
    poolOptions: { forks: { isolate: false } },
    sequence: { sequencer: SharedStackTogether },
    // The JSON report feeds the one-line totals that .ci/run prints.
    reporters: ["default", "json"],
    outputFile: { json: "test-results/vitest.json" },
    projects: [
      {
        test: {
          name: "node",
          environment: "node",
          include: [
            "cli/**/*.test.ts",
            "client/**/*.test.ts",
            "common/**/*.test.ts",
            "control-plane/**/*.test.ts",
            "runtime-host/**/*.test.ts",
            "test/**/*.test.ts",
            "webhooks/**/*.test.ts",
          ],
          // Those run inside workerd, in the control-plane-d1 project; the last, alone, after all.
          exclude: ["**/node_modules/**", "**/*.d1.test.ts", SOURCE_EDITS],
          testTimeout: 60_000,
          hookTimeout: 120_000,
          pool: "forks",
        },
      },
      {
        // It saves the Worker's source under a running stack (the reload must keep the worker):
        // every stack of this checkout reloads then, and a call in flight on another file's
        // stack was cut ("other side closed", twice in CI). So it runs alone, after the others.
        test: {
          name: "node-source-edits",
          environment: "node",
          include: [SOURCE_EDITS],
          testTimeout: 60_000,
          hookTimeout: 120_000,
          pool: "forks",
          sequence: { groupOrder: 1 },
        },
      },
      workersProject("workers", ["worker/**/*.test.ts"], ["worker/routes/full-store.test.ts"]),
      // A shard whose storage is full for real needs workerd's test hook setMaxPageCountForTest,
      // which only the `experimental` flag gives: that file alone runs with it, so every other
      // test runs under the flags the Worker is deployed with.
      workersProject(
        "workers-full-store",
        ["worker/routes/full-store.test.ts"],
        [],
        ["experimental"],
      ),
      defineWorkersProject(async () => ({
        test: {
          name: "control-plane-d1",
          include: ["control-plane/**/*.d1.test.ts"],
          testTimeout: 30_000,
          // Applies the drizzle-kit migrations (TEST_MIGRATIONS below) to the D1 binding.
          setupFiles: ["control-plane/testing/apply-d1-migrations.ts"],
          poolOptions: {
            workers: {
              singleWorker: true,
              // The cases share one database per file, as on libSQL.
              isolatedStorage: false,
              // The control plane's own wrangler environment: its compatibility settings and its
              // D1 binding `DB`, whose migrations_dir is the folder read below.
              wrangler: { configPath: "./wrangler.toml", environment: "control-plane" },
              miniflare: {
                // An empty database of its own for first-user.d1.test.ts.
                d1Databases: { FIRST_USER_DB: { id: "first-user-db" } },
                // A bucket of its own for stray-bundles-r2.d1.test.ts, whose sweeps look at
                // every object: the other files' bundles, recorded in no row, stay out of it.
                r2Buckets: { SWEPT_BUNDLES: { id: "swept-bundles" } },
                // wrangler.toml binds the run API's Worker, which is not running here.
                serviceBindings: {
                  RUN_API: () =>
                    Response.json({ message: "no run API in these tests" }, { status: 502 }),
                },
                bindings: {
                  TEST_MIGRATIONS: await readD1Migrations("control-plane/db/migrations"),
                  // What `control-plane/worker.ts` reads from its secrets in production.
                  SIGNING_KEY: JSON.stringify(await generateSigningKey()),
                  MASTER_SECRET: "dGVzdC1tYXN0ZXItc2VjcmV0LW9mLWF0LWxlYXN0LTMyLWJ5dGVz",
                  INTERNAL_TOKEN: "internal-token-for-tests",
                  RUNTIME_HOST_URL: "http://host.test",
                },
              },
            },
          },
        },
      })),
    ],
  },
});
