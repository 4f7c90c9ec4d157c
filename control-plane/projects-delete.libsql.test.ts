// `DELETE /v2/projects/{id}` on libSQL, the control plane's database under Node.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll } from "vitest";
import { openLibsql } from "./db/index.ts";
import { deleteProjectCases } from "./testing/projects-delete.cases.ts";

const dir = await mkdtemp(join(tmpdir(), "runlet-projects-delete-"));
const opened = openLibsql(`file:${join(dir, "runlet.db")}`);

afterAll(async () => {
  (await opened).close();
  await rm(dir, { recursive: true, force: true });
});

deleteProjectCases(async () => (await opened).db);
