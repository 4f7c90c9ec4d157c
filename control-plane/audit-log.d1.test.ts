// The audit-log cases on D1, the control plane's database under Workers (inside workerd). The
// D1 binding `DB` comes from wrangler.toml's `control-plane` environment; the setup file
// control-plane/testing/apply-d1-migrations.ts has applied the drizzle-kit migrations to it.
import { env } from "cloudflare:test";
import { drizzle } from "drizzle-orm/d1";
import type { Database } from "./db/index.ts";
import * as schema from "./db/schema.ts";
import { auditExportCases } from "./testing/audit-export.cases.ts";
import { auditLogCases } from "./testing/audit-log.cases.ts";
import { paginationProperty } from "./testing/pagination.property.ts";
import { strictD1 } from "./testing/strict-d1.ts";

// Drizzle's D1 and libSQL databases differ only in their raw result types, which we never read.
const open = async () => drizzle(strictD1(env.DB), { schema }) as unknown as Database;

auditLogCases(open);

auditExportCases(open);

paginationProperty(open, 40);
