// `GET /v2/projects` on libSQL, the control plane's database under Node.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll } from "vitest";
import { openLibsql } from "./db/index.ts";
import { listProjectsCases } from "./testing/projects-list.cases.ts";

const dir = await mkdtemp(join(tmpdir(), "runlet-projects-"));
const opened = openLibsql(`file:${join(dir, "runlet.db")}`);

afterAll(async () => {
  (await opened).close();
  await rm(dir, { recursive: true, force: true });
});

listProjectsCases(async () => (await opened).db);
