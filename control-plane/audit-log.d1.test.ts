// The audit-log cases on D1, the control plane's database under Workers (inside workerd).
import { applyD1Migrations, env } from "cloudflare:test";
import { drizzle } from "drizzle-orm/d1";
import type { Database } from "./db/index.ts";
import * as schema from "./db/schema.ts";
import { auditLogCases } from "./testing/audit-log.cases.ts";
import { paginationProperty } from "./testing/pagination.property.ts";

auditLogCases(async () => {
  await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
  // Drizzle's D1 and libSQL databases differ only in their raw result types, which we never read.
  return drizzle(env.DB, { schema }) as unknown as Database;
});

paginationProperty(async () => {
  await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
  return drizzle(env.DB, { schema }) as unknown as Database;
}, 25);
