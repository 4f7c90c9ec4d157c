// `DELETE /v2/projects/{id}` on D1, the control plane's database under Workers (inside workerd;
// the setup file has applied the migrations to the binding `DB`).
import { env } from "cloudflare:test";
import { drizzle } from "drizzle-orm/d1";
import type { Database } from "./db/index.ts";
import * as schema from "./db/schema.ts";
import { deleteProjectCases } from "./testing/projects-delete.cases.ts";
import { strictD1 } from "./testing/strict-d1.ts";

deleteProjectCases(async () => drizzle(strictD1(env.DB), { schema }) as unknown as Database);
