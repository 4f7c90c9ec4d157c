// The first user and the users an operator adds, on D1 inside workerd. Its own database
// (FIRST_USER_DB, vitest.config.ts): DB holds the other files' users, and the claim needs none.
import { applyD1Migrations, env } from "cloudflare:test";
import { drizzle } from "drizzle-orm/d1";
import type { Database } from "./db/index.ts";
import * as schema from "./db/schema.ts";
import { firstUserCases } from "./testing/first-user.cases.ts";
import { strictD1 } from "./testing/strict-d1.ts";

firstUserCases(async () => {
  await applyD1Migrations(env.FIRST_USER_DB, env.TEST_MIGRATIONS);
  return drizzle(strictD1(env.FIRST_USER_DB), { schema }) as unknown as Database;
});
