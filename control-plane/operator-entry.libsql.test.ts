// An operator's way into a project, on libSQL, the control plane's database under Node.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll } from "vitest";
import { openLibsql } from "./db/index.ts";
import { operatorEntryCases } from "./testing/operator-entry.cases.ts";

const dir = await mkdtemp(join(tmpdir(), "runlet-operator-entry-"));
const opened = openLibsql(`file:${join(dir, "runlet.db")}`);

afterAll(async () => {
  (await opened).close();
  await rm(dir, { recursive: true, force: true });
});

operatorEntryCases(async () => (await opened).db);
