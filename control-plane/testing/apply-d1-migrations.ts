// Setup file of the `control-plane-d1` vitest project (vitest.config.ts): applies the drizzle-kit
// migrations to the D1 binding before each test file. Setup files run outside isolated storage
// and may run more than once; applyD1Migrations skips migrations already applied.
import { applyD1Migrations, env } from "cloudflare:test";

await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
