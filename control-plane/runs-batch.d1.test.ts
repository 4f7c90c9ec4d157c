// The runs index's batches on D1, the control plane's database under Workers (inside workerd).
import { env } from "cloudflare:test";
import { drizzle } from "drizzle-orm/d1";
import type { Database } from "./db/index.ts";
import * as schema from "./db/schema.ts";
import { runsBatchCases } from "./testing/runs-batch.cases.ts";
import { strictD1 } from "./testing/strict-d1.ts";

runsBatchCases(async () => drizzle(strictD1(env.DB), { schema }) as unknown as Database);
