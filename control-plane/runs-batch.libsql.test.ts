// The runs index's batches on libSQL, the control plane's database under Node (a real file).
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll } from "vitest";
import { openLibsql } from "./db/index.ts";
import { runsBatchCases } from "./testing/runs-batch.cases.ts";

const dir = await mkdtemp(join(tmpdir(), "runlet-runs-"));
const opened = openLibsql(`file:${join(dir, "runlet.db")}`);

afterAll(async () => {
  (await opened).close();
  await rm(dir, { recursive: true, force: true });
});

runsBatchCases(async () => (await opened).db);
