// An app's async queue counted over the runs index on libSQL (testing/app-queue.cases.ts).
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll } from "vitest";
import { openLibsql } from "./db/index.ts";
import { appQueueCases } from "./testing/app-queue.cases.ts";

const dir = await mkdtemp(join(tmpdir(), "runlet-queue-"));
const opened = openLibsql(`file:${join(dir, "runlet.db")}`);

afterAll(async () => {
  (await opened).close();
  await rm(dir, { recursive: true, force: true });
});

appQueueCases(async () => (await opened).db);
