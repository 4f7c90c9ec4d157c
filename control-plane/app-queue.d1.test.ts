// An app's async queue counted over the runs index on D1, inside workerd (testing/app-queue.cases.ts).
import { env } from "cloudflare:test";
import { drizzle } from "drizzle-orm/d1";
import type { Database } from "./db/index.ts";
import * as schema from "./db/schema.ts";
import { appQueueCases } from "./testing/app-queue.cases.ts";
import { strictD1 } from "./testing/strict-d1.ts";

appQueueCases(async () => drizzle(strictD1(env.DB), { schema }) as unknown as Database);
