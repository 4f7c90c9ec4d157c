// Live names that differ only in case (service accounts, host tokens) are one name, on D1 (the
// control plane's database under Workers; inside workerd, the setup file has applied the
// migrations to `DB`).
import { env } from "cloudflare:test";
import { drizzle } from "drizzle-orm/d1";
import type { Database } from "./db/index.ts";
import * as schema from "./db/schema.ts";
import { namesInCaseCases } from "./testing/names-in-case.cases.ts";
import { strictD1 } from "./testing/strict-d1.ts";

namesInCaseCases(async () => drizzle(strictD1(env.DB), { schema }) as unknown as Database);
